"""/resource_providers/{uuid}/aggregates (1.1; generations from 1.19)."""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import create, new_uuid

AGG_1 = "11111111-2222-4333-8444-555555555555"
AGG_2 = "66666666-7777-4888-9999-000000000000"


@pytest.fixture
def rp(api) -> str:
    return create(api, "rp")


def url(uuid: str) -> str:
    return f"/resource_providers/{uuid}/aggregates"


def test_not_before_1_1(api, rp):
    assert api.get(url(rp), version="1.0").status == 404
    assert api.put(url(rp), json=[], version="1.0").status == 404


def test_empty(api, rp):
    assert api.get(url(rp), version="1.1").json == {"aggregates": []}
    assert api.get(url(rp), version="1.19").json == {
        "aggregates": [], "resource_provider_generation": 0}


def test_missing_provider(api):
    assert api.get(url(new_uuid())).status == 404
    assert api.put(url(new_uuid()), json={
        "aggregates": [], "resource_provider_generation": 0}).status == 404


def test_replace_before_1_19_leaves_generation(api, rp):
    resp = api.put(url(rp), json=[AGG_1, AGG_2], version="1.1")
    assert resp.status == 200
    assert resp.json == {"aggregates": [AGG_1, AGG_2]}
    assert sorted(api.get(url(rp), version="1.18").json["aggregates"]) == [AGG_1, AGG_2]
    assert api.get(f"/resource_providers/{rp}").json["generation"] == 0
    resp = api.put(url(rp), json=[AGG_2], version="1.18")
    assert api.get(url(rp)).json == {"aggregates": [AGG_2],
                                     "resource_provider_generation": 0}


def test_replace_with_generation_from_1_19(api, rp):
    resp = api.put(url(rp), json={"aggregates": [AGG_1],
                                  "resource_provider_generation": 0}, version="1.19")
    assert resp.status == 200
    assert resp.json == {"aggregates": [AGG_1], "resource_provider_generation": 1}
    assert resp.headers["cache-control"] == "no-cache"
    resp = api.put(url(rp), json={"aggregates": [], "resource_provider_generation": 0})
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert ("Resource provider's generation already changed. Please update the generation "
            "and try again." in resp.error()["detail"])
    assert api.get(url(rp)).json == {"aggregates": [AGG_1], "resource_provider_generation": 1}
    resp = api.put(url(rp), json={"aggregates": [], "resource_provider_generation": 1})
    assert resp.json == {"aggregates": [], "resource_provider_generation": 2}


@pytest.mark.parametrize("version, body, fragment", [
    ("1.1", {"aggregates": [AGG_1]}, "is not of type 'array'"),
    ("1.1", ["not-a-uuid"], "is not a 'uuid'"),
    ("1.1", [AGG_1, AGG_1], "has non-unique elements"),
    ("1.19", [AGG_1], "is not of type 'object'"),
    ("1.19", {"aggregates": [AGG_1]}, "'resource_provider_generation' is a required"),
    ("1.19", {"aggregates": [AGG_1], "resource_provider_generation": 0, "x": 1},
     "Additional properties are not allowed"),
    ("1.19", {"aggregates": [1], "resource_provider_generation": 0}, "is not of type"),
])
def test_bad_bodies(api, rp, version, body, fragment):
    resp = api.put(url(rp), json=body, version=version)
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]
    assert fragment in resp.error()["detail"]
    assert api.get(url(rp)).json == {"aggregates": [], "resource_provider_generation": 0}


def test_malformed_json(api, rp):
    resp = api.put(url(rp), body="[", content_type="application/json")
    assert resp.status == 400
    assert "Malformed JSON" in resp.error()["detail"]


def test_aggregates_shared_between_providers(api, rp):
    other = create(api, "other")
    api.put(url(rp), json={"aggregates": [AGG_1], "resource_provider_generation": 0})
    api.put(url(other), json={"aggregates": [AGG_1, AGG_2],
                              "resource_provider_generation": 0})
    listed = api.get(f"/resource_providers?member_of={AGG_1}").json["resource_providers"]
    assert sorted(p["name"] for p in listed) == ["other", "rp"]
    api.put(url(other), json={"aggregates": [], "resource_provider_generation": 1})
    assert api.get(url(rp)).json["aggregates"] == [AGG_1]
