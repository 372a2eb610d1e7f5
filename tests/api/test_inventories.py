"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import allocate, create, new_uuid

MAX_INT = 2147483647
DEFAULTS = {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1,
            "allocation_ratio": 1.0}


@pytest.fixture
def rp(api) -> str:
    return create(api, "rp")


def inv_url(uuid: str, rc: str | None = None) -> str:
    url = f"/resource_providers/{uuid}/inventories"
    return f"{url}/{rc}" if rc else url


def generation(api, uuid: str) -> int:
    return api.get(f"/resource_providers/{uuid}").json["generation"]


def put_all(api, uuid, inventories, gen=None, **kw):
    gen = generation(api, uuid) if gen is None else gen
    return api.put(inv_url(uuid), json={"resource_provider_generation": gen,
                                        "inventories": inventories}, **kw)


def test_empty_inventories(api, rp):
    resp = api.get(inv_url(rp))
    assert resp.status == 200
    assert resp.json == {"resource_provider_generation": 0, "inventories": {}}


def test_missing_provider(api):
    uuid = "7260669a-e3d4-4867-aaa7-683e2ab6958c"
    resp = api.get(inv_url(uuid))
    assert resp.status == 404
    assert f"No resource provider with uuid {uuid} found" in resp.error()["detail"]
    assert api.delete(inv_url(uuid)).status == 404
    assert api.get(inv_url(uuid, "VCPU")).status == 404
    assert api.post(inv_url(uuid), json={"resource_class": "VCPU", "total": 1}).status == 404
    assert put_all(api, uuid, {}, gen=0).status == 404


def test_post_one(api, rp):
    resp = api.post(inv_url(rp), json={"resource_class": "DISK_GB", "total": 2048,
                                       "reserved": 512, "min_unit": 10, "max_unit": 1024,
                                       "step_size": 10, "allocation_ratio": 1.0})
    assert resp.status == 201
    assert resp.headers["location"].endswith(inv_url(rp, "DISK_GB"))
    assert resp.json == {"total": 2048, "reserved": 512, "min_unit": 10, "max_unit": 1024,
                         "step_size": 10, "allocation_ratio": 1.0,
                         "resource_provider_generation": 1}
    got = api.get(inv_url(rp, "DISK_GB"))
    assert got.json == resp.json
    assert got.headers["cache-control"] == "no-cache"
    assert "cache-control" not in api.get(inv_url(rp, "DISK_GB"), version="1.14").headers


def test_post_defaults(api, rp):
    resp = api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 8})
    assert resp.json == {"total": 8, **DEFAULTS, "resource_provider_generation": 1}


def test_post_duplicate_class(api, rp):
    api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 8})
    resp = api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 4})
    assert resp.status == 409
    assert "Update conflict" in resp.error()["detail"]
    assert resp.error()["code"] == "placement.concurrent_update"
    assert api.get(inv_url(rp, "VCPU")).json["total"] == 8


@pytest.mark.parametrize("body, status, fragment", [
    ({"resource_class": "VCPU"}, 400, "'total' is a required property"),
    ({"resource_class": "VCPU", "total": -1}, 400, "JSON does not validate"),
    ({"resource_class": "VCPU", "total": 0}, 400,
     "Failed validating 'minimum' in schema['properties']['total']"),
    ({"resource_class": "VCPU", "total": 1, "min_unit": 0}, 400,
     "Failed validating 'minimum' in schema['properties']['min_unit']"),
    ({"resource_class": "VCPU", "total": 1, "max_unit": 0}, 400,
     "Failed validating 'minimum' in schema['properties']['max_unit']"),
    ({"resource_class": "VCPU", "total": 1, "step_size": 0}, 400,
     "Failed validating 'minimum' in schema['properties']['step_size']"),
    ({"resource_class": "VCPU", "total": 1, "reserved": -1}, 400,
     "Failed validating 'minimum' in schema['properties']['reserved']"),
    ({"resource_class": "VCPU", "total": MAX_INT + 1}, 400, "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": 1, "reserved": MAX_INT + 1}, 400,
     "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": 1, "min_unit": 10 ** 30}, 400,
     "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": 1, "max_unit": MAX_INT + 1}, 400,
     "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": 1, "step_size": MAX_INT + 1}, 400,
     "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": 1, "allocation_ratio": 3.5e38}, 400,
     "Failed validating 'maximum'"),
    ({"resource_class": "VCPU", "total": "8"}, 400, "is not of type 'integer'"),
    ({"resource_class": "VCPU", "total": 8.5}, 400, "is not of type 'integer'"),
    ({"resource_class": "bad_class", "total": 2048}, 400, "does not match"),
    ({"resource_class": "NO_CLASS_14", "total": 2048}, 400,
     "No such resource class NO_CLASS_14"),
    ({"resource_class": "VCPU", "total": 4, "reserved": 4}, 400,
     "Unable to create inventory for resource provider"),
    ({"resource_class": "VCPU", "total": 4, "color": "red"}, 400,
     "Additional properties are not allowed"),
])
def test_post_invalid(api, rp, body, status, fragment):
    resp = api.post(inv_url(rp), json=body, version="1.25")
    assert resp.status == status
    assert fragment in resp.error()["detail"]
    assert api.get(inv_url(rp)).json == {"resource_provider_generation": 0, "inventories": {}}


def test_post_malformed(api, rp):
    resp = api.post(inv_url(rp), body='{"foo": }', content_type="application/json")
    assert resp.status == 400
    assert "Malformed JSON" in resp.error()["detail"]
    resp = api.post(inv_url(rp), body='{"resource_class": "VCPU", "total": 1, '
                                      '"allocation_ratio": NaN}',
                    content_type="application/json")
    assert resp.status == 400


def test_reserved_equal_total_from_1_26(api, rp):
    resp = api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 4, "reserved": 4},
                    version="1.25")
    assert resp.status == 400
    assert ("The reserved value is greater than or equal to total."
            in resp.error()["detail"])
    resp = api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 4, "reserved": 4},
                    version="1.26")
    assert resp.status == 201
    resp = put_all(api, rp, {"VCPU": {"total": 4, "reserved": 5}}, version="1.26")
    assert resp.status == 400
    assert (f"Unable to update inventory for resource provider {rp}: Invalid inventory "
            f"for 'VCPU' on resource provider '{rp}'. The reserved value is greater "
            "than total." in resp.error()["detail"])
    resp = put_all(api, rp, {"VCPU": {"total": 4, "reserved": 4}}, version="1.25")
    assert resp.status == 400
    resp = api.put(inv_url(rp, "VCPU"), json={
        "resource_provider_generation": 1, "total": 8, "reserved": 8}, version="1.25")
    assert resp.status == 400
    assert "Unable to update inventory" in resp.error()["detail"]
    resp = api.put(inv_url(rp, "VCPU"), json={
        "resource_provider_generation": 1, "total": 8, "reserved": 8}, version="1.26")
    assert resp.status == 200


def test_put_all_replaces_everything(api, rp):
    api.post(inv_url(rp), json={"resource_class": "VCPU", "total": 8})
    resp = put_all(api, rp, {"DISK_GB": {"total": 100, "reserved": 10},
                             "IPV4_ADDRESS": {"total": 253, "allocation_ratio": 1.5}})
    assert resp.status == 200
    assert resp.json == {"resource_provider_generation": 2, "inventories": {
        "DISK_GB": {"total": 100, **DEFAULTS, "reserved": 10},
        "IPV4_ADDRESS": {"total": 253, **DEFAULTS, "allocation_ratio": 1.5}}}
    assert api.get(inv_url(rp)).json == resp.json
    assert api.get(inv_url(rp, "VCPU")).status == 404


def test_put_all_bad_generation(api, rp):
    resp = put_all(api, rp, {"VCPU": {"total": 1}}, gen=99)
    assert resp.status == 409
    assert "resource provider generation conflict" in resp.error()["detail"]
    assert resp.error()["code"] == "placement.concurrent_update"


def test_put_all_unknown_class(api, rp):
    resp = put_all(api, rp, {"CUSTOM_NOPE": {"total": 1}, "VCPU": {"total": 1}})
    assert resp.status == 400
    assert ("Unknown resource class in inventory for resource provider "
            f"{rp}: No such resource class CUSTOM_NOPE." in resp.error()["detail"])
    assert generation(api, rp) == 0


@pytest.mark.parametrize("body", [
    {"inventories": {}},
    {"resource_provider_generation": 0},
    {"resource_provider_generation": 0, "inventories": {"VCPU": {}}},
    {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 1, "x": 1}}},
    {"resource_provider_generation": "0", "inventories": {}},
    {"resource_provider_generation": 0, "inventories": []},
])
def test_put_all_schema(api, rp, body):
    resp = api.put(inv_url(rp), json=body)
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]


def test_put_all_in_use(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    allocate(api, rp, {"VCPU": 2, "DISK_GB": 10})
    resp = put_all(api, rp, {}, version="1.23")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.inventory.inuse"
    assert (f"update conflict: Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' "
            "in use." in resp.error()["detail"])
    assert set(api.get(inv_url(rp)).json["inventories"]) == {"VCPU", "DISK_GB"}


def test_shrinking_below_usage_is_allowed_as_upstream(api, rp):
    """A reconfigured host must be able to report what it really has."""
    put_all(api, rp, {"VCPU": {"total": 8}})
    allocate(api, rp, {"VCPU": 6})
    resp = put_all(api, rp, {"VCPU": {"total": 2}})
    assert resp.status == 200
    usages = api.get(f"/resource_providers/{rp}/usages").json["usages"]
    assert usages == {"VCPU": 6}
    resp = api.put(inv_url(rp, "VCPU"), json={
        "resource_provider_generation": generation(api, rp), "total": 1})
    assert resp.status == 200


def test_update_one(api, rp):
    api.post(inv_url(rp), json={"resource_class": "DISK_GB", "total": 2048})
    resp = api.put(inv_url(rp, "DISK_GB"), json={"resource_provider_generation": 1,
                                                  "total": 1024, "max_unit": 512})
    assert resp.status == 200
    assert resp.json == {"total": 1024, **DEFAULTS, "max_unit": 512,
                         "resource_provider_generation": 2}
    assert api.get(inv_url(rp, "DISK_GB")).json == resp.json


def test_update_one_errors(api, rp):
    api.post(inv_url(rp), json={"resource_class": "DISK_GB", "total": 2048})
    resp = api.put(inv_url(rp, "DISK_GB"), json={"resource_provider_generation": 5,
                                                  "total": 1}, version="1.23")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert "resource provider generation conflict" in resp.error()["detail"]
    resp = api.put(inv_url(rp, "MEMORY_MB"), json={"resource_provider_generation": 1,
                                                    "total": 1})
    assert resp.status == 400
    assert "No inventory record with resource class" in resp.error()["detail"]
    resp = api.put(inv_url(rp, "HOUSE"), json={"resource_provider_generation": 1,
                                                "total": 1})
    assert resp.status == 404
    resp = api.put(inv_url(rp, "DISK_GB"), json={"house": "red"})
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]
    resp = api.put(inv_url(rp, "DISK_GB"), json={"total": 4})
    assert resp.status == 400
    assert "'resource_provider_generation' is a required property" in resp.error()["detail"]
    assert api.get(inv_url(rp, "DISK_GB")).json["total"] == 2048


def test_get_one_missing(api, rp):
    resp = api.get(inv_url(rp, "IPV4_ADDRESS"))
    assert resp.status == 404
    assert f"No inventory of class IPV4_ADDRESS for {rp}" in resp.error()["detail"]
    assert api.get(inv_url(rp, "HOUSE")).status == 404


def test_delete_one(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    resp = api.delete(inv_url(rp, "VCPU"))
    assert resp.status == 204
    assert generation(api, rp) == 2
    assert list(api.get(inv_url(rp)).json["inventories"]) == ["DISK_GB"]
    resp = api.delete(inv_url(rp, "VCPU"))
    assert resp.status == 404
    assert "No inventory of class VCPU found for delete" in resp.error()["detail"]
    resp = api.delete(inv_url(rp, "HOUSE"))
    assert resp.status == 404


def test_delete_one_in_use(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}})
    allocate(api, rp, {"VCPU": 1})
    resp = api.delete(inv_url(rp, "VCPU"))
    assert resp.status == 409
    # Upstream reports this with the concurrent-update code.
    assert resp.error()["code"] == "placement.concurrent_update"
    assert (f"Unable to delete inventory of class VCPU: Inventory for 'VCPU' on resource "
            f"provider '{rp}' in use." in resp.error()["detail"])


def test_delete_all_from_1_5(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}})
    resp = api.delete(inv_url(rp), version="1.4")
    assert resp.status == 405
    resp = api.delete(inv_url(rp), version="1.5")
    assert resp.status == 204
    assert api.get(inv_url(rp)).json == {"resource_provider_generation": 2, "inventories": {}}
    assert api.delete(inv_url(rp)).status == 204
    assert generation(api, rp) == 3


def test_delete_all_in_use(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}})
    allocate(api, rp, {"VCPU": 2, "DISK_GB": 10})
    resp = api.delete(inv_url(rp), version="1.23")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.inventory.inuse"
    assert (f"Inventory for 'VCPU, DISK_GB' on resource provider '{rp}' in use"
            in resp.error()["detail"])


def test_resource_class_in_use_cannot_be_deleted(api, rp):
    assert api.put("/resource_classes/CUSTOM_GOLD").status == 201
    put_all(api, rp, {"CUSTOM_GOLD": {"total": 1}})
    resp = api.delete("/resource_classes/CUSTOM_GOLD")
    assert resp.status == 409
    assert "Class is in use in inventory." in resp.error()["detail"]
    assert api.delete(inv_url(rp, "CUSTOM_GOLD")).status == 204
    assert api.delete("/resource_classes/CUSTOM_GOLD").status == 204


def test_inventory_last_modified(api, rp):
    put_all(api, rp, {"VCPU": {"total": 8}})
    resp = api.get(inv_url(rp), version="1.15")
    assert resp.headers["last-modified"].endswith("GMT")
    assert resp.headers["cache-control"] == "no-cache"


def test_custom_class_inventory(api, rp):
    api.put("/resource_classes/CUSTOM_MAGIC")
    resp = api.post(inv_url(rp), json={"resource_class": "CUSTOM_MAGIC", "total": 5})
    assert resp.status == 201
    assert api.get("/resource_providers?resources=CUSTOM_MAGIC:5").status == 200


def test_generation_must_be_exact(api, rp):
    other = create(api, "other")
    assert put_all(api, other, {"VCPU": {"total": 1}}).status == 200
    assert put_all(api, rp, {"VCPU": {"total": 1}}, gen=1).status == 409
    assert put_all(api, new_uuid(), {}, gen=0).status == 404


def test_empty_inventory_has_no_last_modified_but_is_not_cached(api):
    uuid = api.post("/resource_providers", json={"name": "bare"}).json["uuid"]
    listed = api.get(f"/resource_providers/{uuid}/inventories")
    assert listed.status == 200 and listed.json["inventories"] == {}
    # Nothing in the collection has a modification time to report.
    assert "last-modified" not in listed.headers
    assert listed.headers["cache-control"] == "no-cache"
    cleared = api.put(f"/resource_providers/{uuid}/inventories",
                      json={"resource_provider_generation": 0, "inventories": {}})
    assert cleared.status == 200
    assert "last-modified" not in cleared.headers
    assert cleared.headers["cache-control"] == "no-cache"

    api.post(f"/resource_providers/{uuid}/inventories",
             json={"resource_class": "VCPU", "total": 4,
                   "resource_provider_generation": cleared.json["resource_provider_generation"]})
    assert "last-modified" in api.get(f"/resource_providers/{uuid}/inventories").headers


@pytest.mark.parametrize("value", [None, 7, "VCPU", [], -9223372036854775808])
@pytest.mark.parametrize("key", ["VCPU", "extra", "0f7a9c1e-6f43-4f54-9f1e-0d0d1f5c0d11"])
def test_put_all_with_a_non_record_is_400(api, rp, key, value):
    put_all(api, rp, {"DISK_GB": {"total": 10}})
    before = api.get(inv_url(rp)).json
    resp = put_all(api, rp, {"DISK_GB": {"total": 20}, key: value})
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]
    assert api.get(inv_url(rp)).json == before


@pytest.mark.parametrize("record", [{}, {"reserved": 1}])
def test_put_all_with_an_incomplete_record_under_a_bad_name_is_400(api, rp, record):
    resp = put_all(api, rp, {"DISK_GB": {"total": 20}, "not_a_class": record})
    assert resp.status == 400
    assert "'total' is a required property" in resp.error()["detail"]
    assert api.get(inv_url(rp)).json["inventories"] == {}


def test_put_all_with_a_record_under_a_bad_name_is_an_unknown_class(api, rp):
    resp = put_all(api, rp, {"not_a_class": {"total": 1}})
    assert resp.status == 400
    assert "Unknown resource class in inventory" in resp.error()["detail"]
