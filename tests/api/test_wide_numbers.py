"""Numbers past 64 bits in GET /allocation_candidates, as upstream answers them.

A capacity is (total - reserved) times a float allocation ratio, which may
be as large as about 3.4e38: upstream writes the whole integer, up to about
7.3e47.  A limit has no upper bound in the schema, and upstream takes one
larger than any answer as no bound.  Neither is an error.
"""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import create

EXT = {"Allotment-Extensions": "1"}
HUGE_RATIO = 3.4e38
MAX_INT = 2147483647


def inventory(api, provider: str, inventories: dict) -> None:
    generation = api.get(f"/resource_providers/{provider}").json["generation"]
    resp = api.put(f"/resource_providers/{provider}/inventories", json={
        "resource_provider_generation": generation, "inventories": inventories})
    assert resp.status == 200, resp


def capacity(api, provider: str, rc: str) -> int:
    # As stored: MySQL keeps the ratio in single precision.
    inv = api.get(f"/resource_providers/{provider}/inventories").json["inventories"][rc]
    return int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])


@pytest.fixture
def wide(api) -> str:
    host = create(api, "wide")
    inventory(api, host, {"VCPU": {"total": MAX_INT, "max_unit": MAX_INT,
                                   "allocation_ratio": HUGE_RATIO}})
    return host


@pytest.mark.parametrize("version", ["1.10", "1.17", "1.29", "1.39"])
def test_a_capacity_past_64_bits_is_written_whole(api, wide, version):
    expected = capacity(api, wide, "VCPU")
    assert expected > 2 ** 64
    # Twice: the second answer is written from what the first kept.
    for _ in range(2):
        resp = api.get(f"/allocation_candidates?resources=VCPU:{MAX_INT}", version=version)
        assert resp.status == 200, resp
        summary = resp.json["provider_summaries"][wide]["resources"]["VCPU"]
        assert summary == {"capacity": expected, "used": 0}
        assert f'"capacity":{expected},' in resp.text


def test_an_explanation_echoes_an_amount_past_64_bits(api, wide):
    amount = 10 ** 30
    resp = api.get(f"/allocation_candidates?resources=VCPU:{amount}&explain=true",
                   headers=EXT)
    assert resp.status == 200, resp
    assert resp.json["allocation_requests"] == []
    (tree,) = resp.json["explanation"]["trees"]
    assert (tree["reason"], tree["requested"], tree["max_unit"]) == ("max_unit", amount, MAX_INT)


@pytest.fixture
def nested(api) -> list[str]:
    roots = []
    for n in range(3):
        root = create(api, f"host{n}")
        inventory(api, root, {"DISK_GB": {"total": 100}})
        for m in range(2):
            numa = create(api, f"host{n}-numa{m}", parent=root)
            inventory(api, numa, {"VCPU": {"total": 4}})
        roots.append(root)
    return roots


@pytest.mark.parametrize("limit", [str(2 ** 63), "9" * 30, "9" * 5000],
                         ids=["2**63", "30-digits", "5000-digits"])
@pytest.mark.parametrize("headers", [{}, EXT], ids=["standard", "extended"])
def test_a_limit_past_any_answer_is_no_limit(api, nested, limit, headers):
    query = "/allocation_candidates?resources=VCPU:1,DISK_GB:1"
    unlimited = api.get(query, headers=headers)
    assert unlimited.status == 200 and len(unlimited.json["allocation_requests"]) == 6
    resp = api.get(f"{query}&limit={limit}", headers=headers)
    assert resp.status == 200, resp
    assert sorted(map(repr, resp.json["allocation_requests"])) == sorted(
        map(repr, unlimited.json["allocation_requests"]))
    assert resp.json["provider_summaries"] == unlimited.json["provider_summaries"]


@pytest.mark.parametrize("value", ["%C2%B2", "%D9%A3", "9" * 5000, "1001", "0"],
                         ids=["superscript-2", "arabic-indic-3", "5000-digits", "1001", "0"])
def test_explain_limit_is_ascii_digits_within_its_bounds(api, nested, value):
    resp = api.get("/allocation_candidates?resources=VCPU:1&explain=true"
                   f"&explain_limit={value}", headers=EXT)
    assert resp.status == 400, resp
    assert resp.error()["code"] == "placement.query.bad_value"
    assert "expected an integer from 1 to 1000" in resp.error()["detail"]
