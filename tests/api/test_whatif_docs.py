"""The worked examples of docs/extensions/ignore-consumers.md and preempt.md,
run as written: each page's world is built here (with fixed UUIDs standing
for its names), each request in an ``http`` block is sent and the ``json``
block after it is the answer (the keys it shows), or the body it sends."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from tests.api.test_resource_providers import create

EXT = {"Allotment-Extensions": "1"}
DOCS = pathlib.Path(__file__).parents[2] / "docs" / "extensions"
NAMES = {
    "cn1": "00000000-0000-0000-0000-00000000c001",
    "cn2": "00000000-0000-0000-0000-00000000c002",
    "cn3": "00000000-0000-0000-0000-00000000c003",
    **{name: f"00000000-0000-0000-0000-0000000000a{k}" for k, name in enumerate(
        ("vm1", "vm2", "vm3", "spot-a", "spot-b", "spot-c", "batch-d", "batch-e", "new-vm",
         "other-vm"))},
}


@pytest.fixture
def conf_overrides() -> dict:
    return {"allotment": {"preemptible_consumer_types": ["SPOT", "BATCH"]}}


def examples(page: str) -> list[tuple[str, str]]:
    """(request line, the json block after it) for each ``http`` block,
    names replaced by their UUIDs."""
    text = (DOCS / page).read_text()
    for name, uuid in NAMES.items():
        text = text.replace(f"<{name}>", uuid)
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.DOTALL)
    return [(body.splitlines()[0], blocks[k + 1][1]) for k, (kind, body) in enumerate(blocks)
            if kind == "http"]


def host(api, name: str, inventory: dict) -> None:
    create(api, name, uuid=NAMES[name])
    resp = api.put(f"/resource_providers/{NAMES[name]}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {rc: {"total": total} for rc, total in inventory.items()}})
    assert resp.status == 200, resp


def hold(api, consumer: str, provider: str, resources: dict, consumer_type: str) -> None:
    resp = api.put(f"/allocations/{NAMES[consumer]}", json={
        "allocations": {NAMES[provider]: {"resources": resources}},
        "project_id": "p1", "user_id": "u1", "consumer_generation": None,
        "consumer_type": consumer_type}, version="1.38")
    assert resp.status == 204, resp


def answers_as_shown(api, line: str, shown: str) -> None:
    method, url = line.split(" ", 1)
    assert method == "GET"
    resp = api.get(url, headers=EXT, version="1.39")
    assert resp.status == 200, resp
    expected = json.loads(shown)
    assert {k: resp.json[k] for k in expected} == expected


def test_ignore_consumers_page(api):
    host(api, "cn1", {"VCPU": 4})
    host(api, "cn2", {"VCPU": 4})
    hold(api, "vm1", "cn1", {"VCPU": 3}, "INSTANCE")
    hold(api, "vm2", "cn1", {"VCPU": 1}, "INSTANCE")
    hold(api, "vm3", "cn2", {"VCPU": 2}, "INSTANCE")
    found = examples("ignore-consumers.md")
    assert len(found) == 2
    for line, shown in found:
        answers_as_shown(api, line, shown)


def test_preempt_page(api):
    for name in ("cn1", "cn2", "cn3"):
        host(api, name, {"VCPU": 8, "MEMORY_MB": 8192})
    hold(api, "spot-a", "cn1", {"VCPU": 2}, "SPOT")
    hold(api, "spot-b", "cn1", {"VCPU": 4}, "SPOT")
    hold(api, "vm1", "cn1", {"VCPU": 2}, "INSTANCE")
    hold(api, "batch-d", "cn2", {"VCPU": 5}, "BATCH")
    hold(api, "batch-e", "cn2", {"VCPU": 2, "MEMORY_MB": 1024}, "BATCH")
    hold(api, "spot-c", "cn3", {"VCPU": 5}, "SPOT")
    (get, answer), (post, body) = examples("preempt.md")
    answers_as_shown(api, get, answer)
    assert post == "POST /allocations"
    # A second scheduler read the same answer and writes the same eviction
    # for its own instance, after the first.
    other = body.replace(NAMES["new-vm"], NAMES["other-vm"])
    assert api.post("/allocations", json=json.loads(body), version="1.39").status == 204
    assert api.get(f"/allocations/{NAMES['spot-b']}").json["allocations"] == {}
    held = api.get(f"/allocations/{NAMES['new-vm']}").json["allocations"]
    assert {p: a["resources"] for p, a in held.items()} == {NAMES["cn1"]: {"VCPU": 3}}
    resp = api.post("/allocations", json=json.loads(other), version="1.39")
    assert resp.status == 409
    assert resp.json["errors"][0]["code"] == "placement.concurrent_update"
    assert api.get(f"/allocations/{NAMES['other-vm']}").json["allocations"] == {}
    usages = api.get(f"/resource_providers/{NAMES['cn1']}/usages").json["usages"]
    assert usages["VCPU"] == 2 + 2 + 3
