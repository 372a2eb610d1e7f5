"""GET /allocation_candidates?explain=true (with ``Allotment-Extensions: 1``)."""

from __future__ import annotations

import pytest

from tests.api.candidate_helpers import World
from tests.api.test_candidates_extensions import EXT, ext_get
from tests.api.test_seed_candidates import VCPU, fpgas

DISK = "DISK_GB"


def hosts(api) -> World:
    w = World(api)
    w.add("FULL", inv={VCPU: {"total": 4, "max_unit": 4}})
    w.use("FULL", {VCPU: 3})
    w.add("DISKLESS", inv={DISK: 100})
    w.add("FREE", inv={VCPU: 8})
    w.add("SMALL_UNITS", inv={VCPU: {"total": 8, "max_unit": 1}})
    w.add("PLAIN", inv={VCPU: 8}, traits=[])
    w.add("STEPPED", inv={VCPU: {"total": 8, "step_size": 4}})
    return w


def by_root(w: World, body: dict) -> dict:
    return {w.name(t.pop("root_provider_uuid")): t for t in body["explanation"]["trees"]}


def test_each_tree_says_what_stopped_it(api):
    w = hosts(api)
    body = ext_get(w, "resources=VCPU:2&explain=true").json
    trees = by_root(w, body)
    assert trees == {
        "FULL": {"reason": "capacity", "group": "", "resource_class": VCPU,
                 "requested": 2, "provider_uuid": w.uuids["FULL"],
                 "capacity": 4, "used": 3},
        "DISKLESS": {"reason": "no_inventory", "group": "", "resource_class": VCPU},
        "SMALL_UNITS": {"reason": "max_unit", "group": "", "resource_class": VCPU,
                        "requested": 2, "provider_uuid": w.uuids["SMALL_UNITS"],
                        "max_unit": 1},
        "STEPPED": {"reason": "step_size", "group": "", "resource_class": VCPU,
                    "requested": 2, "provider_uuid": w.uuids["STEPPED"],
                    "step_size": 4},
    }
    assert body["explanation"] | {"trees": None} == {
        "trees_examined": 6, "trees_with_candidates": 2, "trees_cut_by_limit": 0,
        "trees_without_candidates": 4, "truncated": False, "trees": None,
        "sharing_providers": []}
    # The candidates themselves are the usual answer.
    plain = ext_get(w, "resources=VCPU:2").json
    assert body["allocation_requests"] == plain["allocation_requests"]
    assert "explanation" not in plain


def test_root_traits_and_root_aggregates_come_first(api):
    w = hosts(api)
    w.set_traits("FREE", ["COMPUTE_STATUS_DISABLED"])
    body = ext_get(w, "resources=VCPU:2&root_required=!COMPUTE_STATUS_DISABLED"
                      "&explain=true").json
    assert by_root(w, body)["FREE"] == {"reason": "root_forbidden",
                                        "trait": "COMPUTE_STATUS_DISABLED"}
    agg = w.agg("az1")
    body = ext_get(w, f"resources=VCPU:2&root_member_of={agg}&explain=true").json
    assert by_root(w, body)["FREE"] == {"reason": "root_member_of", "aggregates": [agg]}


def test_limit_and_explain_limit(api):
    w = hosts(api)
    body = ext_get(w, "resources=VCPU:2&limit=1&explain=true").json
    assert len(body["allocation_requests"]) == 1
    assert body["explanation"]["trees_cut_by_limit"] == 1
    body = ext_get(w, "resources=VCPU:2&explain=true&explain_limit=1").json
    explanation = body["explanation"]
    assert explanation["truncated"] is True
    assert explanation["trees_without_candidates"] == 1
    assert explanation["trees_examined"] < 6


def test_nothing_fits_anywhere_is_explained_too(api):
    w = hosts(api)
    body = ext_get(w, "resources=VCPU:100&explain=true").json
    assert body["allocation_requests"] == []
    # 100 is a multiple of STEPPED's step: its capacity is what stops it.
    assert {t["reason"] for t in body["explanation"]["trees"]} == {
        "no_inventory", "max_unit", "capacity"}
    assert body["explanation"]["trees_without_candidates"] == 6


def test_groups_fitting_alone_but_not_together_name_the_same_subtree(api):
    # NUMA0 has the VCPUs, only NUMA1 has the TYPE2 FPGA.
    w = fpgas(api)
    w.use("NUMA1", {VCPU: 2})
    body = ext_get(w, "resources_COMPUTE=VCPU:4&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1"
                      "&required_ACCEL=CUSTOM_TYPE2&same_subtree=_COMPUTE,_ACCEL"
                      "&explain=true").json
    assert by_root(w, body) == {"CN": {
        "reason": "same_subtree", "same_subtree": ["_ACCEL", "_COMPUTE"]}}


def test_suffixed_group_reasons_name_the_group(api):
    w = fpgas(api)
    w.trait("TYPE3")
    body = ext_get(w, "resources_COMPUTE=VCPU:1&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1"
                      "&required_ACCEL=CUSTOM_TYPE3,CUSTOM_TYPE1&explain=true").json
    assert by_root(w, body) == {"CN": {
        "reason": "required_trait", "group": "_ACCEL", "traits": ["CUSTOM_TYPE3"]}}


@pytest.mark.parametrize(("query", "detail"), [
    ("explain=yes", "Invalid value for 'explain'"),
    ("explain=true&explain_limit=0", "Invalid value for 'explain_limit'"),
    ("explain=true&explain_limit=1001", "Invalid value for 'explain_limit'"),
    ("explain_limit=5", "needs 'explain=true'"),
    ("explain=true&explain=true", "may be specified only once"),
])
def test_bad_explain_parameters_are_a_400(api, query, detail):
    resp = ext_get(World(api), "resources=VCPU:1&" + query, status=400)
    assert detail in resp.error()["detail"]


def test_explain_follows_the_candidates_policy(api):
    resp = api.get("/allocation_candidates?resources=VCPU:1&explain=true",
                   token="someone", headers=EXT)
    assert resp.status == 403


def test_a_split_class_the_tree_cannot_hold_even_divided(api):
    w = fpgas(api)
    body = ext_get(w, "resources=VCPU:9&can_split=VCPU&explain=true").json
    assert by_root(w, body) == {"CN": {
        "reason": "split_capacity", "group": "", "resource_class": VCPU,
        "requested": 9, "free_in_tree": 8}}
    assert ext_get(w, "resources=VCPU:8&can_split=VCPU&explain=true").json[
        "explanation"]["trees_without_candidates"] == 0


def test_sharing_providers_no_group_can_use(api):
    from tests.api.test_seed_candidates import sharing
    w = sharing(api)
    body = ext_get(w, "resources=VCPU:1,DISK_GB:2000&explain=true").json
    shared = {w.name(s.pop("provider_uuid")): s
              for s in body["explanation"]["sharing_providers"]}
    assert shared == {
        "SS1": {"reason": "capacity", "group": "", "resource_class": "DISK_GB",
                "requested": 2000, "capacity": 1000, "used": 0},
        "SS2": {"reason": "serves_no_tree", "group": ""},
    }
    # A pool some group can use is not listed.
    body = ext_get(w, "resources=VCPU:1,DISK_GB:500&explain=true").json
    assert [w.name(s["provider_uuid"]) for s in body["explanation"]["sharing_providers"]] \
        == ["SS2"]
