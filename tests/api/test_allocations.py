"""GET, PUT and DELETE /allocations/{consumer_uuid} across microversions."""

from __future__ import annotations

import pytest

from allotment import conf as conf_mod
from tests.api.allocation_helpers import (
    PROJECT,
    USER,
    allocations,
    body,
    claim,
    generation,
    make_provider,
    new_uuid,
    set_inventory,
    usages,
)

INCOMPLETE = conf_mod.DEFAULT_CONSUMER_MISSING_ID


@pytest.fixture
def rp(api):
    return make_provider(api, VCPU=8, DISK_GB={"total": 100, "max_unit": 50})


def list_body(rp_uuid, **resources):
    return {"allocations": [{"resource_provider": {"uuid": rp_uuid}, "resources": resources}]}


def dict_body(rp_uuid, **resources):
    return {"allocations": {rp_uuid: {"resources": resources}},
            "project_id": PROJECT, "user_id": USER}


# --- reading -----------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.0", "1.12", "1.28", "1.38"])
def test_unknown_consumer_has_no_allocations(api, version):
    resp = api.get(f"/allocations/{new_uuid()}", version=version)
    assert resp.status == 200
    assert resp.json == {"allocations": {}}


def test_get_fields_follow_the_microversion(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2, DISK_GB=10).status == 204
    gen = generation(api, rp)
    expected_allocs = {rp: {"generation": gen, "resources": {"VCPU": 2, "DISK_GB": 10}}}

    assert allocations(api, consumer, "1.11") == {"allocations": expected_allocs}
    assert allocations(api, consumer, "1.12") == {
        "allocations": expected_allocs, "project_id": PROJECT, "user_id": USER}
    assert allocations(api, consumer, "1.28") == {
        "allocations": expected_allocs, "project_id": PROJECT, "user_id": USER,
        "consumer_generation": 1}
    assert allocations(api, consumer, "1.38") == {
        "allocations": expected_allocs, "project_id": PROJECT, "user_id": USER,
        "consumer_generation": 1, "consumer_type": "INSTANCE"}


def test_cache_headers_from_1_15(api, rp):
    consumer = new_uuid()
    claim(api, consumer, rp, VCPU=1)
    old = api.get(f"/allocations/{consumer}", version="1.14")
    assert "last-modified" not in old.headers and "cache-control" not in old.headers
    new = api.get(f"/allocations/{consumer}", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


def test_put_and_delete_have_no_body_or_cache_headers(api, rp):
    consumer = new_uuid()
    resp = claim(api, consumer, rp, VCPU=1)
    assert resp.status == 204 and resp.text == ""
    assert "last-modified" not in resp.headers and "cache-control" not in resp.headers
    resp = api.delete(f"/allocations/{consumer}")
    assert resp.status == 204 and resp.text == ""


def test_get_collection_is_405(api):
    resp = api.get("/allocations", version="1.0")
    assert resp.status == 405
    assert resp.headers["allow"] == "POST"


# --- request formats ------------------------------------------------------------

def test_list_format_before_1_8_uses_incomplete_consumer_ids(api, rp):
    consumer = new_uuid()
    resp = api.put(f"/allocations/{consumer}", json=list_body(rp, VCPU=1), version="1.0")
    assert resp.status == 204, resp
    got = allocations(api, consumer, "1.12")
    assert got["project_id"] == INCOMPLETE and got["user_id"] == INCOMPLETE
    assert got["allocations"][rp]["resources"] == {"VCPU": 1}


@pytest.mark.parametrize("conf_overrides", [
    {"placement": {"incomplete_consumer_project_id": "legacy-p",
                   "incomplete_consumer_user_id": "legacy-u"}}])
def test_incomplete_consumer_ids_come_from_config(api, rp):
    consumer = new_uuid()
    assert api.put(f"/allocations/{consumer}", json=list_body(rp, VCPU=1),
                   version="1.7").status == 204
    got = allocations(api, consumer, "1.12")
    assert (got["project_id"], got["user_id"]) == ("legacy-p", "legacy-u")


def test_owner_not_accepted_before_1_8(api, rp):
    data = {**list_body(rp, VCPU=1), "project_id": PROJECT, "user_id": USER}
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.7")
    assert resp.status == 400
    assert "Additional properties are not allowed" in resp.error()["detail"]


@pytest.mark.parametrize("missing", ["project_id", "user_id"])
def test_owner_required_from_1_8(api, rp, missing):
    data = {**list_body(rp, VCPU=1), "project_id": PROJECT, "user_id": USER}
    del data[missing]
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.8")
    assert resp.status == 400
    assert f"'{missing}' is a required property" in resp.error()["detail"]


@pytest.mark.parametrize("field,value", [("project_id", ""), ("user_id", ""),
                                         ("project_id", "x" * 256)])
def test_owner_length_limits(api, rp, field, value):
    data = {**list_body(rp, VCPU=1), "project_id": PROJECT, "user_id": USER, field: value}
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.8")
    assert resp.status == 400


def test_list_format_with_owner_at_1_8(api, rp):
    consumer = new_uuid()
    data = {**list_body(rp, VCPU=1), "project_id": "p1", "user_id": "u1"}
    assert api.put(f"/allocations/{consumer}", json=data, version="1.11").status == 204
    got = allocations(api, consumer, "1.12")
    assert (got["project_id"], got["user_id"]) == ("p1", "u1")


def test_list_format_refused_from_1_12_and_dict_before(api, rp):
    data = {**list_body(rp, VCPU=1), "project_id": PROJECT, "user_id": USER}
    assert api.put(f"/allocations/{new_uuid()}", json=data, version="1.12").status == 400
    resp = api.put(f"/allocations/{new_uuid()}", json=dict_body(rp, VCPU=1), version="1.11")
    assert resp.status == 400


def test_dict_format_at_1_12_ignores_generation_field(api, rp):
    consumer = new_uuid()
    data = dict_body(rp, VCPU=3)
    data["allocations"][rp]["generation"] = 999
    assert api.put(f"/allocations/{consumer}", json=data, version="1.12").status == 204
    assert allocations(api, consumer)["allocations"][rp]["resources"] == {"VCPU": 3}


@pytest.mark.parametrize("version,data,fragment", [
    ("1.0", {"allocations": []}, "should be non-empty"),
    ("1.0", {"allocations": [{"resources": {"DISK_GB": 10}}]},
     "'resource_provider' is a required property"),
    ("1.12", {"allocations": {}, "project_id": "p", "user_id": "u"}, "should be non-empty"),
    ("1.12", {"allocations": {"not-a-uuid": {"resources": {"VCPU": 1}}},
              "project_id": "p", "user_id": "u"}, "does not match any of the regexes"),
    ("1.12", {"allocations": {"9229b2fc-d556-4e38-9c18-443e4bc6ceae": {
        "resources": {"cow": 1}}}, "project_id": "p", "user_id": "u"},
     "does not match any of the regexes"),
    ("1.12", {"allocations": {"9229b2fc-d556-4e38-9c18-443e4bc6ceae": {
        "resources": {"VCPU": 0}}}, "project_id": "p", "user_id": "u"},
     "0 is less than the minimum of 1"),
    ("1.12", {"allocations": {"9229b2fc-d556-4e38-9c18-443e4bc6ceae": {
        "resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u", "bad_field": 1},
     "Additional properties are not allowed"),
])
def test_schema_violations(api, version, data, fragment):
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version=version)
    assert resp.status == 400
    detail = resp.error()["detail"]
    assert "JSON does not validate" in detail and fragment in detail


def test_body_must_be_json(api, rp):
    resp = api.put(f"/allocations/{new_uuid()}", body="allocations", content_type="text/plain")
    assert resp.status == 415
    resp = api.put(f"/allocations/{new_uuid()}", body="{", content_type="application/json")
    assert resp.status == 400


def test_malformed_consumer_uuid(api, rp):
    resp = claim(api, "not-a-uuid", rp, VCPU=1)
    assert resp.status == 400
    assert "Malformed consumer_uuid: not-a-uuid" in resp.error()["detail"]


def test_dashless_consumer_uuid_is_normalised(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer.replace("-", ""), rp, VCPU=1).status == 204
    assert allocations(api, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}


# --- consumer generations (1.28) -----------------------------------------------

def test_consumer_generation_required_from_1_28(api, rp):
    data = dict_body(rp, VCPU=1)
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.28")
    assert resp.status == 400
    assert "'consumer_generation' is a required property" in resp.error()["detail"]


def test_new_consumer_needs_null_generation(api, rp):
    consumer = new_uuid()
    resp = api.put(f"/allocations/{consumer}", json=body(rp, 5, VCPU=1))
    assert resp.status == 409
    error = resp.error()
    assert error["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected null but got 5" in error["detail"]
    assert allocations(api, consumer)["allocations"] == {}


def test_existing_consumer_generation_must_match(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=1).status == 204
    assert allocations(api, consumer)["consumer_generation"] == 1

    resp = api.put(f"/allocations/{consumer}", json=body(rp, None, VCPU=2))
    assert resp.status == 409
    assert "expected 1 but got None" in resp.error()["detail"]
    resp = api.put(f"/allocations/{consumer}", json=body(rp, 12, VCPU=2))
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected 1 but got 12" in resp.error()["detail"]
    assert allocations(api, consumer)["allocations"][rp]["resources"] == {"VCPU": 1}

    assert api.put(f"/allocations/{consumer}", json=body(rp, 1, VCPU=2)).status == 204
    got = allocations(api, consumer)
    assert got["consumer_generation"] == 2
    assert got["allocations"][rp]["resources"] == {"VCPU": 2}


def test_generation_not_checked_before_1_28(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=1).status == 204
    resp = api.put(f"/allocations/{consumer}", json=dict_body(rp, VCPU=3), version="1.27")
    assert resp.status == 204
    got = allocations(api, consumer)
    assert got["consumer_generation"] == 2
    assert got["allocations"][rp]["resources"] == {"VCPU": 3}


def test_empty_allocations_remove_the_consumer_from_1_28(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2).status == 204
    gen = generation(api, rp)
    data = {"allocations": {}, "project_id": PROJECT, "user_id": USER,
            "consumer_generation": 1}
    assert api.put(f"/allocations/{consumer}", json=data, version="1.28").status == 204
    assert allocations(api, consumer) == {"allocations": {}}
    assert usages(api, rp)["VCPU"] == 0
    # The provider whose allocation went away moved on.
    assert generation(api, rp) == gen + 1
    # The consumer is gone: a new claim starts from a null generation.
    assert claim(api, consumer, rp, VCPU=1).status == 204


def test_empty_allocations_for_unknown_consumer_leave_its_record(api, rp):
    # As upstream: the consumer is recorded at generation 0 and stays, so the
    # next write for it names that generation.
    consumer = new_uuid()
    data = {"allocations": {}, "project_id": PROJECT, "user_id": USER,
            "consumer_generation": None}
    assert api.put(f"/allocations/{consumer}", json=data, version="1.28").status == 204
    assert allocations(api, consumer) == {"allocations": {}}
    resp = api.put(f"/allocations/{consumer}", json=data, version="1.28")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    # Writing nothing again changes nothing: still generation 0.
    data["consumer_generation"] = 0
    assert api.put(f"/allocations/{consumer}", json=data, version="1.28").status == 204
    assert api.put(f"/allocations/{consumer}", json=data, version="1.28").status == 204
    assert usages_of_project(api) == {}
    data = {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": PROJECT,
            "user_id": USER, "consumer_generation": 0}
    assert api.put(f"/allocations/{consumer}", json=data, version="1.28").status == 204
    assert allocations(api, consumer)["consumer_generation"] == 1


def usages_of_project(api) -> dict:
    return api.get(f"/usages?project_id={PROJECT}", version="1.38").json["usages"]


# --- consumer types (1.38) and mappings (1.34) -----------------------------------

def test_consumer_type_required_from_1_38(api, rp):
    resp = api.put(f"/allocations/{new_uuid()}", json=body(rp, consumer_type=None, VCPU=1))
    assert resp.status == 400
    assert "'consumer_type' is a required property" in resp.error()["detail"]


def test_consumer_type_pattern(api, rp):
    resp = api.put(f"/allocations/{new_uuid()}", json=body(rp, consumer_type="instance",
                                                            VCPU=1))
    assert resp.status == 400
    assert "'instance' does not match '^[A-Z0-9_]+$'" in resp.error()["detail"]


def test_consumer_type_refused_before_1_38(api, rp):
    resp = api.put(f"/allocations/{new_uuid()}", json=body(rp, VCPU=1), version="1.37")
    assert resp.status == 400
    assert "'consumer_type' was unexpected" in resp.error()["detail"]


def test_consumer_type_unknown_kept_and_changed(api, rp):
    consumer = new_uuid()
    assert api.put(f"/allocations/{consumer}", json=body(rp, consumer_type=None, VCPU=1),
                   version="1.37").status == 204
    assert allocations(api, consumer)["consumer_type"] == "unknown"
    assert api.put(f"/allocations/{consumer}", json=body(rp, 1, consumer_type="MIGRATION",
                                                          VCPU=1)).status == 204
    assert allocations(api, consumer)["consumer_type"] == "MIGRATION"
    # Writing at an older microversion keeps the type.
    assert api.put(f"/allocations/{consumer}", json=body(rp, 2, consumer_type=None, VCPU=2),
                   version="1.37").status == 204
    assert allocations(api, consumer)["consumer_type"] == "MIGRATION"


def test_owner_follows_the_latest_write(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=1).status == 204
    data = body(rp, 1, project="other-project", user="other-user", VCPU=1)
    assert api.put(f"/allocations/{consumer}", json=data).status == 204
    got = allocations(api, consumer)
    assert (got["project_id"], got["user_id"]) == ("other-project", "other-user")


def test_mappings_accepted_from_1_34(api, rp):
    data = body(rp, consumer_type=None, VCPU=1)
    data["mappings"] = {"_NUMA0": [rp]}
    assert api.put(f"/allocations/{new_uuid()}", json=data, version="1.34").status == 204
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.33")
    assert resp.status == 400
    assert "Additional properties are not allowed" in resp.error()["detail"]
    data["mappings"] = {"beta": "not-a-list"}
    resp = api.put(f"/allocations/{new_uuid()}", json=data, version="1.34")
    assert resp.status == 400
    assert "'not-a-list' is not of type 'array'" in resp.error()["detail"]
    data["mappings"] = {}
    assert api.put(f"/allocations/{new_uuid()}", json=data, version="1.34").status == 400


# --- checks against providers and inventory --------------------------------------

def test_provider_must_exist(api, rp):
    missing = new_uuid()
    resp = claim(api, new_uuid(), missing, VCPU=1)
    assert resp.status == 400
    assert (f"Allocation for resource provider '{missing}' that does not exist."
            in resp.error()["detail"])


def test_resource_class_must_exist(api, rp):
    consumer = new_uuid()
    resp = claim(api, consumer, rp, CUSTOM_PONY=1)
    assert resp.status == 400
    detail = resp.error()["detail"]
    assert f"Unable to allocate inventory for consumer {consumer}" in detail
    assert "No such resource class CUSTOM_PONY" in detail


def test_provider_without_inventory(api):
    bare = make_provider(api)
    resp = claim(api, new_uuid(), bare, DISK_GB=10)
    assert resp.status == 409
    assert (f"Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider "
            f"'{bare}' invalid." in resp.error()["detail"])


def test_class_not_in_inventory(api, rp):
    resp = claim(api, new_uuid(), rp, VCPU=1, MEMORY_MB=64)
    assert resp.status == 409
    assert f"Inventory for 'MEMORY_MB' on resource provider '{rp}' invalid" in \
        resp.error()["detail"]


@pytest.mark.parametrize("amount", [5, 300, 25])
def test_inventory_constraints(api, amount):
    rp = make_provider(api, DISK_GB={"total": 1000, "min_unit": 10, "max_unit": 200,
                                     "step_size": 10})
    consumer = new_uuid()
    resp = claim(api, consumer, rp, DISK_GB=amount)
    assert resp.status == 409
    assert resp.error()["code"] == "placement.undefined_code"
    assert (f"Unable to create allocation for 'DISK_GB' on resource provider '{rp}'. "
            "The requested amount would violate inventory constraints." in
            resp.error()["detail"])
    assert claim(api, consumer, rp, DISK_GB=40).status == 204


def test_capacity_is_total_minus_reserved_times_ratio(api):
    rp = make_provider(api, VCPU={"total": 10, "reserved": 2, "allocation_ratio": 1.5})
    assert claim(api, new_uuid(), rp, VCPU=8).status == 204
    assert claim(api, new_uuid(), rp, VCPU=4).status == 204
    consumer = new_uuid()
    resp = claim(api, consumer, rp, VCPU=1)
    assert resp.status == 409
    assert (f"Unable to create allocation for 'VCPU' on resource provider '{rp}'. "
            "The requested amount would exceed the capacity." in resp.error()["detail"])
    assert usages(api, rp)["VCPU"] == 12
    # A failed first claim leaves no consumer behind: null still works later.
    assert allocations(api, consumer) == {"allocations": {}}


def test_failed_write_changes_nothing(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2, DISK_GB=10).status == 204
    gen = generation(api, rp)
    resp = api.put(f"/allocations/{consumer}", json=body(rp, 1, VCPU=2, DISK_GB=500))
    assert resp.status == 409
    got = allocations(api, consumer)
    assert got["allocations"][rp]["resources"] == {"VCPU": 2, "DISK_GB": 10}
    assert got["consumer_generation"] == 1
    assert generation(api, rp) == gen


def test_replacing_releases_the_old_allocation_first(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=6).status == 204
    assert api.put(f"/allocations/{consumer}", json=body(rp, 1, VCPU=8)).status == 204
    assert usages(api, rp)["VCPU"] == 8


def test_moving_to_another_provider(api, rp):
    other = make_provider(api, VCPU=4)
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2).status == 204
    assert api.put(f"/allocations/{consumer}", json=body(other, 1, VCPU=2)).status == 204
    assert usages(api, rp)["VCPU"] == 0
    assert usages(api, other)["VCPU"] == 2
    assert list(allocations(api, consumer)["allocations"]) == [other]


def test_each_write_advances_the_provider_generation_once(api, rp):
    other = make_provider(api, VCPU=4)
    before = generation(api, rp), generation(api, other)
    data = body(rp, VCPU=1)
    data["allocations"][other] = {"resources": {"VCPU": 1}}
    assert api.put(f"/allocations/{new_uuid()}", json=data).status == 204
    assert (generation(api, rp), generation(api, other)) == (before[0] + 1, before[1] + 1)
    got = api.get(f"/resource_providers/{rp}/allocations").json
    assert got["resource_provider_generation"] == before[0] + 1


def test_over_capacity_provider_accepts_writes_that_do_not_worsen_it(api):
    rp = make_provider(api, VCPU=10)
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=8).status == 204
    set_inventory(api, rp, VCPU=5)  # now over capacity: 8 used of 5
    assert api.put(f"/allocations/{consumer}", json=body(rp, 1, VCPU=9)).status == 409
    assert api.put(f"/allocations/{consumer}", json=body(rp, 1, VCPU=6)).status == 204
    assert claim(api, new_uuid(), rp, VCPU=1).status == 409
    assert usages(api, rp)["VCPU"] == 6


# --- deleting -------------------------------------------------------------------

def test_delete(api, rp):
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2).status == 204
    assert api.delete(f"/allocations/{consumer}").status == 204
    assert usages(api, rp)["VCPU"] == 0
    assert allocations(api, consumer) == {"allocations": {}}
    resp = api.delete(f"/allocations/{consumer}")
    assert resp.status == 404
    assert f"No allocations for consumer '{consumer}'" in resp.error()["detail"]
    # The consumer went with its allocations.
    assert claim(api, consumer, rp, VCPU=1).status == 204


def test_delete_unknown_consumer(api):
    resp = api.delete(f"/allocations/{new_uuid()}")
    assert resp.status == 404
    assert resp.error()["title"] == "Not Found"


def test_provider_with_allocations_cannot_be_deleted(api, rp):
    assert claim(api, new_uuid(), rp, VCPU=1).status == 204
    resp = api.delete(f"/resource_providers/{rp}", version="1.23")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.resource_provider.inuse"


# --- policy ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_needs_permission(api, rp, method):
    kwargs = {"json": body(rp, VCPU=1)} if method == "put" else {}
    resp = getattr(api, method)(f"/allocations/{new_uuid()}", token="someone", **kwargs)
    assert resp.status == 403
