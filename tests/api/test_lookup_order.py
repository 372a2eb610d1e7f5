"""An unknown provider is reported (404) before anything wrong with the body
(400), and a bad body of a known provider is still a 400, on every write that
names a provider in its path."""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import create, new_uuid

# (method, path under the provider, a body that fails validation)
WRITES = [
    ("PUT", "/inventories", {"inventories": {}}),
    ("POST", "/inventories", {"resource_class": "VCPU"}),
    ("PUT", "/inventories/VCPU", {"total": 1}),
    ("PUT", "/aggregates", {"aggregates": "nope"}),
    ("PUT", "", {"name": 7}),
]


@pytest.mark.parametrize("method,suffix,bad", WRITES)
def test_unknown_provider_is_404_before_a_bad_body(api, method, suffix, bad):
    resp = api.request(method, f"/resource_providers/{new_uuid()}{suffix}", json=bad)
    assert resp.status == 404, resp.json
    assert resp.json["errors"][0]["code"] == "placement.undefined_code"


@pytest.mark.parametrize("method,suffix,bad", WRITES)
def test_known_provider_with_a_bad_body_is_400(api, method, suffix, bad):
    uuid = create(api, "rp")
    resp = api.request(method, f"/resource_providers/{uuid}{suffix}", json=bad)
    assert resp.status == 400, resp.json
    assert "JSON does not validate" in resp.json["errors"][0]["detail"]


@pytest.mark.parametrize("method,suffix,_", WRITES)
def test_unknown_provider_with_malformed_json_is_404(api, method, suffix, _):
    resp = api.request(method, f"/resource_providers/{new_uuid()}{suffix}",
                       body=b"{not json", headers={"Content-Type": "application/json"})
    assert resp.status == 404


def test_listing_checks_names_in_upstreams_order(api):
    """GET /resource_providers: an aggregate or traits nobody has end the
    request with an empty list before later names are looked up, as in
    Placement; an unknown name met before that is a 400."""
    uuid = create(api, "rp")
    nowhere = new_uuid()
    # member_of matches nobody: the unknown class after it is never looked up.
    resp = api.get(f"/resource_providers?resources=CUSTOM_NOWHERE:1&member_of={nowhere}"
                   f"&in_tree={uuid}", version="1.14")
    assert resp.status == 200 and resp.json["resource_providers"] == []
    # Required traits nobody has: likewise for an unknown forbidden trait.
    resp = api.get("/resource_providers?required=HW_CPU_X86_AVX2,!CUSTOM_NOWHERE",
                   version="1.22")
    assert resp.status == 200 and resp.json["resource_providers"] == []
    # Met before anything rules everything out: 400.
    resp = api.get("/resource_providers?resources=CUSTOM_NOWHERE:1", version="1.14")
    assert resp.status == 400
    assert "No such resource class CUSTOM_NOWHERE" in resp.json["errors"][0]["detail"]
    resp = api.get(f"/resource_providers?resources=CUSTOM_NOWHERE:1,VCPU:{2**31}",
                   version="1.14")
    assert resp.status == 400
