"""GET /allocation_candidates with the ``Allotment-Extensions: 1`` opt-in.

The nested-magic document's examples that involve the features Placement
never shipped, asked as the document writes them, with the extension on;
and the same requests without it, answered exactly as before.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.api.candidate_helpers import World, cand
from tests.api.test_seed_candidates import (
    FPGA,
    MEM,
    SPEC_FPGA,
    VCPU,
    VF,
    VIFS,
    fpgas,
    nic_pfs,
    vifs,
)

EXT = {"Allotment-Extensions": "1"}


def ext_get(w: World, query: str, status: int = 200, version: str = "latest"):
    resp = w.api.get(f"/allocation_candidates?{query}", version=version, headers=EXT)
    assert resp.status == status, resp
    return resp


def shapes(w: World, resp) -> Counter:
    return Counter(w.shape(ar) for ar in resp.json["allocation_requests"])


# --- the opt-in ----------------------------------------------------------------

def test_the_answer_says_the_extension_was_applied(api):
    w = vifs(api)
    resp = ext_get(w, VIFS + "none")
    assert resp.headers["Allotment-Extensions"] == "1"
    assert "Allotment-Extensions" not in w.get(VIFS + "none").headers


@pytest.mark.parametrize("query", [
    "resources=VCPU:1&root_member_of=5f4bd6a2-1b2b-4f0c-8f0b-000000000001",
    "resources_A=VCPU:1&resources_B=VCPU:1&isolate=_A,_B",
    "resources=VCPU:1&explain=true",
])
def test_extension_parameters_without_the_opt_in_are_refused_as_upstream(api, query):
    resp = api.get(f"/allocation_candidates?{query}")
    assert resp.status == 400
    assert "Invalid query string parameters" in resp.error()["detail"]
    assert ext_get(World(api), query).status == 200


def test_anti_affinity_without_the_opt_in_is_refused_as_upstream(api):
    w = fpgas(api)
    query = ("resources_COMPUTE=VCPU:1&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1"
             "&group_policy=none&same_subtree=_COMPUTE,!_ACCEL")
    resp = w.get(query, status=400)
    assert "Real suffixes should be specified in `same_subtree`" in resp.error()["detail"]


@pytest.mark.parametrize(("headers", "version", "detail"), [
    ({"Allotment-Extensions": "2"}, "latest", "Unknown Allotment-Extensions value"),
    ({"Allotment-Extensions": "yes"}, "latest", "Unknown Allotment-Extensions value"),
    (EXT, "1.35", "needs microversion 1.36"),
])
def test_opt_in_needs_a_known_level_and_a_recent_microversion(api, headers, version, detail):
    resp = api.get("/allocation_candidates?resources=VCPU:1", version=version,
                   headers=headers)
    assert resp.status == 400
    assert detail in resp.error()["detail"]


@pytest.mark.parametrize("query", [
    "resources_COMPUTE=VCPU:1,MEMORY_MB:256&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1"
    "&group_policy=none&same_subtree=_COMPUTE,_ACCEL",
    "required_NUMA=HW_NUMA_ROOT&resources_ACCEL1=CUSTOM_ACCELERATOR_FPGA:1"
    "&required_ACCEL1=CUSTOM_TYPE1&resources_ACCEL2=CUSTOM_ACCELERATOR_FPGA:1"
    "&required_ACCEL2=CUSTOM_TYPE2&group_policy=isolate&same_subtree=_NUMA,_ACCEL1,_ACCEL2",
    "resources=VCPU:1&limit=1",
    "resources=VCPU:1&required=!HW_NUMA_ROOT",
])
def test_standard_requests_answer_the_same_with_the_opt_in(api, query):
    w = fpgas(api)
    assert ext_get(w, query).json == w.get(query).json


def test_spec_nic_example_answers_the_same_with_the_opt_in(api):
    w = nic_pfs(api)
    query = ("resources_VIF_NET1=SRIOV_NET_VF:1&required_VIF_NET1=CUSTOM_NET1"
             "&resources_VIF_NET2=SRIOV_NET_VF:1&required_VIF_NET2=CUSTOM_NET2"
             "&required_NIC_AFFINITY=CUSTOM_HW_NIC_ROOT"
             "&same_subtree=_VIF_NET1,_VIF_NET2,_NIC_AFFINITY")
    standard = w.get(query + "&group_policy=none").json
    assert len(standard["allocation_requests"]) == 2
    assert ext_get(w, query + "&group_policy=none").json == standard
    # As the document writes it, without group_policy.
    assert ext_get(w, query).json == standard


# --- group_policy defaults to none -----------------------------------------------

def test_spec_same_subtree_example_as_written_needs_no_group_policy(api):
    w = fpgas(api, fpga="FPGA", numa_traits=(), numa0_used=2)
    c, one = {VCPU: 2, MEM: 512}, {"FPGA": 1}
    assert shapes(w, ext_get(w, SPEC_FPGA)) == Counter([
        cand(("NUMA0", c), ("FPGA0_0", one)),
        cand(("NUMA1", c), ("FPGA1_0", one)),
        cand(("NUMA1", c), ("FPGA1_1", one)),
    ])
    # Without the opt-in the same request is refused, as upstream does.
    assert w.get(SPEC_FPGA, status=400)


def test_spec_vif_example_without_group_policy_is_the_none_answer(api):
    w = vifs(api)
    query = VIFS.removesuffix("&group_policy=")
    assert ext_get(w, query).json == w.get(VIFS + "none").json


# --- isolate= ----------------------------------------------------------------------

def test_spec_vif_example_with_isolate_needs_two_pfs(api):
    w = vifs(api)
    query = VIFS.removesuffix("&group_policy=") + "&isolate=_VIF1,_VIF2"
    body = ext_get(w, query).json
    assert {w.shape(ar) for ar in body["allocation_requests"]} == {
        cand(("pf1_1", {VF: 1}), ("pf1_2", {VF: 1}))}
    assert body == w.get(VIFS + "isolate").json


@pytest.mark.parametrize(("query", "detail"), [
    ("&isolate=_VIF1,_VIF2&group_policy=none", "mutually exclusive"),
    ("&isolate=_VIF1,_NOPE", "Real suffixes should be specified in `isolate`"),
    ("&isolate=_VIF1,", "can not be specified in `isolate`"),
])
def test_bad_isolate_is_a_400(api, query, detail):
    w = vifs(api)
    resp = ext_get(w, VIFS.removesuffix("&group_policy=") + query, status=400)
    assert detail in resp.error()["detail"]


# --- same_subtree anti-affinity ----------------------------------------------------

def test_fpga_from_another_numa_node(api):
    w = fpgas(api)
    resp = ext_get(w, "resources_COMPUTE=VCPU:1,MEMORY_MB:256"
                      "&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1&same_subtree=_COMPUTE,!_ACCEL")
    c, one = {VCPU: 1, MEM: 256}, {FPGA: 1}
    assert shapes(w, resp) == Counter([
        cand(("NUMA0", c), ("FPGA1_0", one)),
        cand(("NUMA0", c), ("FPGA1_1", one)),
        cand(("NUMA1", c), ("FPGA0_0", one)),
    ])


def test_vfs_from_different_nics_with_resourceless_nic_groups(api):
    # The document's NIC tree: one VF on NET1 under some NIC, one VF on NET2
    # under a NIC that is not that one.
    w = nic_pfs(api)
    resp = ext_get(w, "resources_V1=SRIOV_NET_VF:1&required_V1=CUSTOM_NET1"
                      "&resources_V2=SRIOV_NET_VF:1&required_V2=CUSTOM_NET2"
                      "&required_NIC1=CUSTOM_HW_NIC_ROOT"
                      "&same_subtree=_NIC1,_V1&same_subtree=_NIC1,!_V2")
    assert shapes(w, resp) == Counter([
        cand(("pf1_1", {VF: 1}), ("pf2_2", {VF: 1})),
        cand(("pf2_1", {VF: 1}), ("pf1_2", {VF: 1})),
    ])


@pytest.mark.parametrize(("same_subtree", "detail"), [
    ("!_ACCEL", "needs at least one group without '!'"),
    ("_ACCEL,!_ACCEL", "both with and without '!'"),
    ("_COMPUTE,!_NOPE", "Real suffixes should be specified in `same_subtree`"),
    ("_COMPUTE,!", "can not be specified in `same_subtree`"),
])
def test_bad_anti_affinity_is_a_400(api, same_subtree, detail):
    w = fpgas(api)
    resp = ext_get(w, "resources_COMPUTE=VCPU:1&resources_ACCEL=CUSTOM_ACCELERATOR_FPGA:1"
                      f"&same_subtree={same_subtree}", status=400)
    assert detail in resp.error()["detail"]


# --- root_member_of ------------------------------------------------------------------

def zones(api) -> World:
    w = World(api)
    for host, aggs in (("CN1", ["az1"]), ("CN2", ["az2"]), ("CN3", ["az1", "az2"])):
        w.add(host, aggs=aggs)
        w.add(f"{host}_NUMA", parent=host, inv={VCPU: 4}, aggs=["numa"])
    return w


def roots(w: World, resp) -> list[str]:
    return sorted(w.name(ar["mappings"][""][0]).removesuffix("_NUMA")
                  for ar in resp.json["allocation_requests"])


def test_root_member_of(api):
    w = zones(api)
    q = "resources=VCPU:1&root_member_of="
    assert roots(w, ext_get(w, w.query(q + "{az1}"))) == ["CN1", "CN3"]
    assert roots(w, ext_get(w, w.query(q + "in:{az1},{az2}"))) == ["CN1", "CN2", "CN3"]
    assert roots(w, ext_get(w, w.query(q + "{az1}&root_member_of={az2}"))) == ["CN3"]
    assert roots(w, ext_get(w, w.query(q + "!{az2}"))) == ["CN1"]
    assert roots(w, ext_get(w, w.query(q + "!in:{az1},{az2}"))) == []
    # Only the root's aggregates count.
    assert roots(w, ext_get(w, w.query(q + "{numa}"))) == []


@pytest.mark.parametrize("value", ["not-a-uuid", "{az1},{az2}", ""])
def test_bad_root_member_of_is_a_400(api, value):
    w = zones(api)
    resp = ext_get(w, w.query("resources=VCPU:1&root_member_of=" + value), status=400)
    assert "root_member_of" in resp.error()["detail"]


# --- can_split ---------------------------------------------------------------------

def numa_host(api) -> World:
    w = World(api)
    w.add("CN", inv={"DISK_GB": 100})
    w.add("NUMA0", parent="CN", inv={VCPU: 4, MEM: 2048})
    w.add("NUMA1", parent="CN", inv={VCPU: 4, MEM: 2048})
    w.use("NUMA0", {VCPU: 2})
    return w


def test_can_split_divides_vcpus_over_numa_nodes(api):
    w = numa_host(api)
    query = "resources=VCPU:6,MEMORY_MB:1024,DISK_GB:10"
    assert w.get(query).json["allocation_requests"] == []
    resp = ext_get(w, query + "&can_split=VCPU,MEMORY_MB")
    disk = ("CN", {"DISK_GB": 10})
    assert shapes(w, resp) == Counter([
        cand(("NUMA0", {VCPU: 2, MEM: 1024}), ("NUMA1", {VCPU: 4}), disk),
        cand(("NUMA0", {VCPU: 2}), ("NUMA1", {VCPU: 4, MEM: 1024}), disk),
    ])
    assert {frozenset(w.mappings(ar)[""]) for ar in resp.json["allocation_requests"]} == {
        frozenset({"NUMA0", "NUMA1", "CN"})}
    # When one node can take it all, can_split changes nothing.
    small = "resources=VCPU:2,MEMORY_MB:512&can_split=VCPU"
    assert ext_get(w, small).json == w.get("resources=VCPU:2,MEMORY_MB:512").json


@pytest.mark.parametrize(("query", "detail"), [
    ("resources=VCPU:1&can_split=VCPU&can_split=VCPU", "may be specified only once"),
    ("resources=VCPU:1&can_split=MEMORY_MB", "does not request"),
    ("resources_A=VCPU:1&can_split=VCPU", "does not request"),
    ("resources=VCPU:1&can_split=VCPU,", "Invalid value for 'can_split'"),
])
def test_bad_can_split_is_a_400(api, query, detail):
    resp = ext_get(World(api), query, status=400)
    assert detail in resp.error()["detail"]


def test_can_split_without_the_opt_in_is_refused_as_upstream(api):
    resp = api.get("/allocation_candidates?resources=VCPU:1&can_split=VCPU")
    assert resp.status == 400
    assert "Invalid query string parameters" in resp.error()["detail"]
