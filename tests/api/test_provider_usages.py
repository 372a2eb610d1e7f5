"""GET /resource_providers/{uuid}/usages."""

from __future__ import annotations

from tests.api.test_resource_providers import allocate, create, new_uuid


def test_usages(api):
    rp = create(api, "rp")
    url = f"/resource_providers/{rp}/usages"
    assert api.get(url, version="1.0").json == {"resource_provider_generation": 0,
                                                "usages": {}}
    api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}}})
    assert api.get(url).json == {"resource_provider_generation": 1,
                                 "usages": {"VCPU": 0, "DISK_GB": 0}}
    allocate(api, rp, {"VCPU": 2})
    allocate(api, rp, {"VCPU": 3, "DISK_GB": 10})
    resp = api.get(url)
    assert resp.json["usages"] == {"VCPU": 5, "DISK_GB": 10}
    assert resp.json["resource_provider_generation"] == 3
    assert resp.headers["cache-control"] == "no-cache"
    assert "cache-control" not in api.get(url, version="1.14").headers


def test_missing_provider(api):
    uuid = new_uuid()
    resp = api.get(f"/resource_providers/{uuid}/usages")
    assert resp.status == 404
    assert (f"No resource provider with uuid {uuid} found: No resource provider with uuid "
            f"{uuid} found" in resp.error()["detail"])
