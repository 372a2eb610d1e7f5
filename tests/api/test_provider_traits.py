"""/resource_providers/{uuid}/traits (1.6) and the trait-deletion rule."""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import create, new_uuid


@pytest.fixture
def rp(api) -> str:
    return create(api, "rp")


def url(uuid: str) -> str:
    return f"/resource_providers/{uuid}/traits"


def test_not_before_1_6(api, rp):
    assert api.get(url(rp), version="1.5").status == 404
    assert api.put(url(rp), json={"traits": [], "resource_provider_generation": 0},
                   version="1.5").status == 404
    assert api.delete(url(rp), version="1.5").status == 404


def test_empty_and_missing(api, rp):
    assert api.get(url(rp)).json == {"traits": [], "resource_provider_generation": 0}
    uuid = new_uuid()
    resp = api.get(url(uuid))
    assert resp.status == 404
    assert f"No resource provider with uuid {uuid} found" in resp.error()["detail"]
    assert api.delete(url(uuid)).status == 404
    assert api.put(url(uuid), json={"traits": [],
                                    "resource_provider_generation": 0}).status == 404


def test_replace_and_get(api, rp):
    api.put("/traits/CUSTOM_GOLD")
    resp = api.put(url(rp), json={"traits": ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"],
                                  "resource_provider_generation": 0})
    assert resp.status == 200
    assert resp.json == {"traits": ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"],
                         "resource_provider_generation": 1}
    assert resp.headers["cache-control"] == "no-cache"
    assert api.get(url(rp)).json == resp.json
    resp = api.put(url(rp), json={"traits": ["HW_CPU_X86_SSE"],
                                  "resource_provider_generation": 1})
    assert resp.json == {"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 2}


def test_stale_generation(api, rp):
    resp = api.put(url(rp), json={"traits": ["HW_CPU_X86_AVX2"],
                                  "resource_provider_generation": 3})
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert "Resource provider's generation already changed." in resp.error()["detail"]
    assert api.get(url(rp)).json["traits"] == []


def test_unknown_traits(api, rp):
    resp = api.put(url(rp), json={"traits": ["HW_CPU_X86_AVX2", "CUSTOM_NOPE", "NOPE_B"],
                                  "resource_provider_generation": 0})
    assert resp.status == 400
    assert "No such trait CUSTOM_NOPE, NOPE_B" in resp.error()["detail"]
    assert api.get(url(rp)).json == {"traits": [], "resource_provider_generation": 0}


@pytest.mark.parametrize("body, fragment", [
    ({"traits": ["HW_CPU_X86_AVX2"]}, "'resource_provider_generation' is a required"),
    ({"resource_provider_generation": 0}, "'traits' is a required property"),
    ({"traits": [""], "resource_provider_generation": 0}, "Failed validating 'minLength'"),
    ({"traits": ["A" * 256], "resource_provider_generation": 0}, "Failed validating 'maxLength'"),
    ({"traits": "HW_CPU_X86_AVX2", "resource_provider_generation": 0}, "is not of type"),
    ({"traits": [], "resource_provider_generation": 0, "x": 1}, "Additional properties"),
])
def test_bad_bodies(api, rp, body, fragment):
    resp = api.put(url(rp), json=body)
    assert resp.status == 400
    assert fragment in resp.error()["detail"]


def test_delete_all(api, rp):
    api.put(url(rp), json={"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0})
    resp = api.delete(url(rp))
    assert resp.status == 204
    assert api.get(url(rp)).json == {"traits": [], "resource_provider_generation": 2}


def test_trait_in_use_cannot_be_deleted(api, rp):
    assert api.put("/traits/CUSTOM_USED").status == 201
    api.put(url(rp), json={"traits": ["CUSTOM_USED"], "resource_provider_generation": 0})
    resp = api.delete("/traits/CUSTOM_USED")
    assert resp.status == 409
    assert "The trait CUSTOM_USED is in use by a resource provider." in resp.error()["detail"]
    assert api.get("/traits?associated=true").json["traits"] == ["CUSTOM_USED"]
    api.delete(url(rp))
    assert api.delete("/traits/CUSTOM_USED").status == 204


def test_setting_the_same_traits_or_clearing_none_keeps_the_generation(api):
    uuid = api.post("/resource_providers", json={"name": "steady"}).json["uuid"]
    assert api.delete(f"/resource_providers/{uuid}/traits").status == 204
    assert api.get(f"/resource_providers/{uuid}").json["generation"] == 0

    body = {"traits": ["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"],
            "resource_provider_generation": 0}
    first = api.put(f"/resource_providers/{uuid}/traits", json=body)
    assert first.json["resource_provider_generation"] == 1
    # The same set again, in another order: no change, so no new generation.
    again = api.put(f"/resource_providers/{uuid}/traits", json={
        "traits": ["STORAGE_DISK_SSD", "HW_CPU_X86_AVX2"],
        "resource_provider_generation": 1})
    assert again.status == 200
    assert again.json["resource_provider_generation"] == 1
    assert sorted(again.json["traits"]) == ["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"]
    # A stale generation is still refused, change or not.
    stale = api.put(f"/resource_providers/{uuid}/traits", json=dict(body))
    assert stale.status == 409
    # A real change moves it on.
    changed = api.put(f"/resource_providers/{uuid}/traits", json={
        "traits": ["STORAGE_DISK_SSD"], "resource_provider_generation": 1})
    assert changed.json["resource_provider_generation"] == 2
