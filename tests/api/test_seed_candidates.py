"""Every worked example of the seed documents, through GET /allocation_candidates.

Each test builds the drawn environment with the provider endpoints, issues
the documented request and asserts exactly the documented candidates (and
that the documented non-candidates are absent).  Names that are neither
standard resource classes nor standard traits become CUSTOM_ ones.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.api.candidate_helpers import SHARES, World, cand

DISK, MEM, VCPU, VF = "DISK_GB", "MEMORY_MB", "VCPU", "SRIOV_NET_VF"
# Not a standard class: the drawing's ACCELERATOR_FPGA becomes a custom one.
FPGA = "CUSTOM_ACCELERATOR_FPGA"
SSL = "HW_NIC_ACCEL_SSL"
BASE = "resources=VCPU:1,MEMORY_MB:512,DISK_GB:500"


def got(w: World, query: str, version: str = "latest") -> Counter:
    return Counter(w.candidates(w.query(query), version))


# --- the blog post: one provider, no nesting, no sharing --------------------

def test_simple_request_and_its_provider_summary(api):
    w = World(api)
    w.add("RP", inv={DISK: 243, MEM: 11206, VCPU: 16})
    # The usage the summary reports comes from earlier servers.
    w.use("RP", {DISK: 6, MEM: 3200, VCPU: 8})
    body = w.get("resources=DISK_GB:1,MEMORY_MB:512,VCPU:1", version="1.15").json
    rp = w.uuids["RP"]
    assert body == {
        "allocation_requests": [{"allocations": {rp: {"resources": {
            "DISK_GB": 1, "MEMORY_MB": 512, "VCPU": 1}}}}],
        "provider_summaries": {rp: {"resources": {
            "DISK_GB": {"capacity": 243, "used": 6},
            "MEMORY_MB": {"capacity": 11206, "used": 3200},
            "VCPU": {"capacity": 16, "used": 8}}}},
    }


# --- provider-tree.rst: sharing providers -----------------------------------

def sharing(api) -> World:
    w = World(api)
    w.add("SS1", inv={DISK: 1000}, traits=[SHARES], aggs=["aggA"])
    w.add("SS2", inv={DISK: 1000}, traits=[SHARES])
    w.add("CN1", inv={VCPU: 8, MEM: 1024, DISK: 1000}, aggs=["aggA"])
    w.add("CN2", inv={VCPU: 8, MEM: 1024, DISK: 1000})
    return w


LOCAL = {VCPU: 1, MEM: 512, DISK: 500}
COMPUTE = {VCPU: 1, MEM: 512}


def test_sharing_provider_joins_the_tree_of_its_aggregate(api):
    w = sharing(api)
    result = got(w, BASE)
    assert result == Counter([
        cand(("CN1", LOCAL)),
        cand(("CN2", LOCAL)),
        cand(("CN1", COMPUTE), ("SS1", {DISK: 500})),
    ])
    # SS2 shares nothing: it is in no aggregate.
    assert not any(name == "SS2" for c in result for name, _, _ in c)


def nested_sharing(api) -> World:
    w = World(api)
    w.add("SS1", inv={DISK: 1000}, traits=[SHARES], aggs=["aggA"])
    w.add("CN1", inv={MEM: 1024, DISK: 1000}, aggs=["aggA", "aggB"])
    w.add("NUMA1_1", parent="CN1", inv={VCPU: 8})
    w.add("NUMA1_2", parent="CN1", inv={VCPU: 8})
    w.add("CN2", inv={MEM: 1024, DISK: 1000}, aggs=["aggA"])
    w.add("NUMA2_1", parent="CN2", inv={VCPU: 8}, aggs=["aggB"])
    w.add("NUMA2_2", parent="CN2", inv={VCPU: 8})
    return w


def eight() -> Counter:
    result = Counter()
    for cn, numas in (("CN1", ("NUMA1_1", "NUMA1_2")), ("CN2", ("NUMA2_1", "NUMA2_2"))):
        for numa in numas:
            result[cand((numa, {VCPU: 1}), (cn, {MEM: 512, DISK: 500}))] += 1
            result[cand((numa, {VCPU: 1}), (cn, {MEM: 512}), ("SS1", {DISK: 500}))] += 1
    return result


def test_sharing_provider_serves_every_provider_of_the_tree(api):
    w = nested_sharing(api)
    assert got(w, BASE) == eight()


def test_member_of_an_aggregate_on_the_roots_spans_their_trees(api):
    w = nested_sharing(api)
    assert got(w, BASE + "&member_of={aggA}") == eight()


def test_member_of_an_aggregate_on_a_child_does_not_span_its_tree(api):
    w = nested_sharing(api)
    result = got(w, BASE + "&member_of={aggB}")
    assert result == Counter([
        cand(("NUMA1_1", {VCPU: 1}), ("CN1", {MEM: 512, DISK: 500})),
        cand(("NUMA1_2", {VCPU: 1}), ("CN1", {MEM: 512, DISK: 500})),
    ])


# --- provider-tree.rst: traits and granular requests ------------------------

def nics(api) -> World:
    w = World(api)
    w.add("CN1", inv={VCPU: 8, MEM: 1024, DISK: 1000})
    w.add("NIC1_1", parent="CN1", inv={VF: 8}, traits=[SSL])
    w.add("NIC1_2", parent="CN1", inv={VF: 8})
    return w


WITH_VF = BASE + ",SRIOV_NET_VF:2"


def test_required_trait_picks_the_nic_having_it(api):
    w = nics(api)
    assert got(w, WITH_VF + f"&required={SSL}") == Counter([
        cand(("CN1", LOCAL), ("NIC1_1", {VF: 2}))])


def test_forbidden_trait_excludes_the_nic_having_it(api):
    w = nics(api)
    assert got(w, WITH_VF + f"&required=!{SSL}") == Counter([
        cand(("CN1", LOCAL), ("NIC1_2", {VF: 2}))])


def test_traits_not_asked_for_are_ignored(api):
    w = nics(api)
    assert got(w, WITH_VF) == Counter([
        cand(("CN1", LOCAL), ("NIC1_1", {VF: 2})),
        cand(("CN1", LOCAL), ("NIC1_2", {VF: 2})),
    ])


GRANULAR = BASE + f"&resources1=SRIOV_NET_VF:1&required1={SSL}&resources2=SRIOV_NET_VF:1"


def test_granular_isolate_takes_vfs_from_two_nics(api):
    w = nics(api)
    body = w.get(GRANULAR + "&group_policy=isolate").json
    assert [w.shape(ar) for ar in body["allocation_requests"]] == [
        cand(("CN1", LOCAL), ("NIC1_1", {VF: 1}), ("NIC1_2", {VF: 1}))]
    assert w.mappings(body["allocation_requests"][0]) == {
        "": {"CN1"}, "1": {"NIC1_1"}, "2": {"NIC1_2"}}


def test_granular_none_lets_one_nic_serve_both_groups(api):
    w = nics(api)
    assert got(w, GRANULAR + "&group_policy=none") == Counter([
        cand(("CN1", LOCAL), ("NIC1_1", {VF: 1}), ("NIC1_2", {VF: 1})),
        cand(("CN1", LOCAL), ("NIC1_1", {VF: 2})),
    ])


# --- provider-tree.rst: filtering by tree -----------------------------------

def trees(api) -> World:
    w = World(api)
    w.add("SS1", inv={DISK: 1000}, traits=[SHARES], aggs=["agg"])
    w.add("SS2", inv={DISK: 1000}, traits=[SHARES], aggs=["agg"])
    w.add("CN1", inv={DISK: 1000}, aggs=["agg"])
    w.add("NUMA1_1", parent="CN1", inv={VCPU: 4})
    w.add("NUMA1_2", parent="CN1", inv={VCPU: 4})
    w.add("CN2", inv={DISK: 1000}, aggs=["agg"])
    w.add("NUMA2_1", parent="CN2", inv={VCPU: 4})
    w.add("NUMA2_2", parent="CN2", inv={VCPU: 4})
    return w


@pytest.mark.parametrize("member", ["CN1", "NUMA1_1"])
def test_in_tree_keeps_one_tree_named_by_any_member(api, member):
    w = trees(api)
    query = "resources=VCPU:1,DISK_GB:50&in_tree={" + member + "}"
    assert got(w, query) == Counter([
        cand(("NUMA1_1", {VCPU: 1}), ("CN1", {DISK: 50})),
        cand(("NUMA1_2", {VCPU: 1}), ("CN1", {DISK: 50})),
    ])


def test_unsuffixed_in_tree_leaves_a_suffixed_group_free(api):
    w = trees(api)
    result = got(w, "resources=VCPU:1&in_tree={CN1}&resources1=DISK_GB:10")
    assert result == Counter(
        cand((numa, {VCPU: 1}), (disk, {DISK: 10}))
        for disk in ("CN1", "SS1", "SS2") for numa in ("NUMA1_1", "NUMA1_2"))


def test_suffixed_in_tree_sticks_to_a_sharing_provider(api):
    w = trees(api)
    result = got(w, "resources=VCPU:1&resources1=DISK_GB:10&in_tree1={SS1}")
    assert result == Counter(
        cand((numa, {VCPU: 1}), ("SS1", {DISK: 10}))
        for numa in ("NUMA1_1", "NUMA1_2", "NUMA2_1", "NUMA2_2"))


def test_two_suffixed_in_trees(api):
    w = trees(api)
    result = got(w, "resources1=VCPU:1&in_tree1={CN1}&resources2=DISK_GB:10"
                    "&in_tree2={SS1}&group_policy=isolate")
    assert result == Counter([
        cand(("NUMA1_1", {VCPU: 1}), ("SS1", {DISK: 10})),
        cand(("NUMA1_2", {VCPU: 1}), ("SS1", {DISK: 10})),
    ])


# --- provider-tree.rst: root provider traits --------------------------------

def root_traits(api) -> World:
    w = World(api)
    w.add("NON_NUMA_CN", inv={VCPU: 8, MEM: 1024, DISK: 1000},
          traits=["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH",
                  "CUSTOM_WINDOWS_LICENSE_POOL"])
    w.add("NUMA_CN", inv={DISK: 1000},
          traits=["STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH"])
    w.add("NUMA1", parent="NUMA_CN", inv={VCPU: 4, MEM: 1024})
    w.add("NUMA2", parent="NUMA_CN", inv={VCPU: 4, MEM: 1024}, traits=["HW_CPU_X86_AVX2"])
    return w


ROOT_QUERY = "resources1=VCPU:1,MEMORY_MB:512{required1}&resources2=DISK_GB:100" \
             "&group_policy=none&root_required={root}"


def test_root_required_trait(api):
    w = root_traits(api)
    query = ROOT_QUERY.format(required1="&required1=HW_CPU_X86_AVX2",
                              root="COMPUTE_VOLUME_MULTI_ATTACH")
    assert Counter(w.candidates(query)) == Counter([
        cand(("NON_NUMA_CN", {VCPU: 1, MEM: 512, DISK: 100})),
        cand(("NUMA_CN", {DISK: 100}), ("NUMA2", {VCPU: 1, MEM: 512})),
    ])


def test_root_forbidden_trait(api):
    w = root_traits(api)
    query = ROOT_QUERY.format(required1="", root="!CUSTOM_WINDOWS_LICENSE_POOL")
    assert Counter(w.candidates(query)) == Counter([
        cand(("NUMA_CN", {DISK: 100}), ("NUMA1", {VCPU: 1, MEM: 512})),
        cand(("NUMA_CN", {DISK: 100}), ("NUMA2", {VCPU: 1, MEM: 512})),
    ])


# --- provider-tree.rst and the nested-magic spec: same_subtree --------------

def fpgas(api, *, fpga: str = FPGA, numa_traits=("HW_NUMA_ROOT",), numa0_used: int = 0
          ) -> World:
    w = World(api)
    w.add("CN")
    w.add("NUMA0", parent="CN", inv={VCPU: 4, MEM: 2048}, traits=numa_traits)
    w.add("NUMA1", parent="CN", inv={VCPU: 4, MEM: 2048}, traits=numa_traits)
    w.add("FPGA0_0", parent="NUMA0", inv={fpga: 1}, traits=["CUSTOM_TYPE1"])
    w.add("FPGA1_0", parent="NUMA1", inv={fpga: 1}, traits=["CUSTOM_TYPE1"])
    w.add("FPGA1_1", parent="NUMA1", inv={fpga: 1}, traits=["CUSTOM_TYPE2"])
    if numa0_used:
        w.use("NUMA0", {VCPU: numa0_used})
    return w


def test_same_subtree_keeps_fpgas_under_the_numa_node(api):
    w = fpgas(api)
    result = got(w, "resources_COMPUTE=VCPU:1,MEMORY_MB:256&resources_ACCEL="
                    "CUSTOM_ACCELERATOR_FPGA:1&group_policy=none&same_subtree=_COMPUTE,_ACCEL")
    c = {VCPU: 1, MEM: 256}
    one = {FPGA: 1}
    assert result == Counter([
        cand(("NUMA0", c), ("FPGA0_0", one)),
        cand(("NUMA1", c), ("FPGA1_0", one)),
        cand(("NUMA1", c), ("FPGA1_1", one)),
    ])
    for bad in (cand(("NUMA0", c), ("FPGA1_0", one)), cand(("NUMA0", c), ("FPGA1_1", one)),
                cand(("NUMA1", c), ("FPGA0_0", one))):
        assert bad not in result


def test_same_subtree_with_a_resourceless_numa_group(api):
    w = fpgas(api)
    body = w.get("required_NUMA=HW_NUMA_ROOT&resources_ACCEL1=CUSTOM_ACCELERATOR_FPGA:1"
                 "&required_ACCEL1=CUSTOM_TYPE1&resources_ACCEL2=CUSTOM_ACCELERATOR_FPGA:1"
                 "&required_ACCEL2=CUSTOM_TYPE2&group_policy=none"
                 "&same_subtree=_NUMA,_ACCEL1,_ACCEL2").json
    shapes = [w.shape(ar) for ar in body["allocation_requests"]]
    assert shapes == [cand(("FPGA1_0", {FPGA: 1}), ("FPGA1_1", {FPGA: 1}))]
    # Not FPGA0_0 + FPGA1_1 (under NUMA0 or NUMA1), nor anything under NUMA0.
    assert cand(("FPGA0_0", {FPGA: 1}), ("FPGA1_1", {FPGA: 1})) not in shapes
    # NUMA1 allocates nothing but is named in the mappings.
    assert [w.mappings(ar) for ar in body["allocation_requests"]] == [{
        "_NUMA": {"NUMA1"}, "_ACCEL1": {"FPGA1_0"}, "_ACCEL2": {"FPGA1_1"}}]


SPEC_FPGA = ("resources_COMPUTE=VCPU:2,MEMORY_MB:512&resources_ACCEL=FPGA:1"
             "&same_subtree=_COMPUTE,_ACCEL")


def test_spec_same_subtree_with_a_partly_used_numa_node(api):
    # numa0 has 2 of its 4 VCPUs in use, as drawn.  The spec's request has no
    # group_policy; Placement 16.0.0 still requires one with two suffixed
    # groups, so the example is asked with group_policy=none.
    w = fpgas(api, fpga="FPGA", numa_traits=(), numa0_used=2)
    result = got(w, SPEC_FPGA + "&group_policy=none")
    c = {VCPU: 2, MEM: 512}
    one = {"FPGA": 1}
    assert result == Counter([
        cand(("NUMA0", c), ("FPGA0_0", one)),
        cand(("NUMA1", c), ("FPGA1_0", one)),
        cand(("NUMA1", c), ("FPGA1_1", one)),
    ])
    for bad in (cand(("NUMA0", c), ("FPGA1_0", one)), cand(("NUMA0", c), ("FPGA1_1", one)),
                cand(("NUMA1", c), ("FPGA0_0", one))):
        assert bad not in result
    resp = api.get("/allocation_candidates?" + SPEC_FPGA)
    assert resp.status == 400
    assert 'The "group_policy" parameter is required' in resp.error()["detail"]


def nic_pfs(api) -> World:
    w = World(api)
    w.add("compute node")
    w.add("nic1", parent="compute node", traits=["HW_NIC_ROOT"])
    w.add("nic2", parent="compute node", traits=["HW_NIC_ROOT"])
    w.add("pf1_1", parent="nic1", inv={VF: 4}, traits=["NET1"])
    w.add("pf1_2", parent="nic1", inv={VF: 4}, traits=["NET2"])
    w.add("pf2_1", parent="nic2", inv={VF: 2}, traits=["NET1"])
    w.add("pf2_2", parent="nic2", inv={VF: 2}, traits=["NET2"])
    return w


def test_spec_resourceless_nic_group_pairs_pfs_of_one_nic(api):
    w = nic_pfs(api)
    body = w.get("resources_VIF_NET1=SRIOV_NET_VF:1&required_VIF_NET1=CUSTOM_NET1"
                 "&resources_VIF_NET2=SRIOV_NET_VF:1&required_VIF_NET2=CUSTOM_NET2"
                 "&required_NIC_AFFINITY=CUSTOM_HW_NIC_ROOT&group_policy=none"
                 "&same_subtree=_VIF_NET1,_VIF_NET2,_NIC_AFFINITY").json
    result = Counter(w.shape(ar) for ar in body["allocation_requests"])
    assert result == Counter([
        cand(("pf1_1", {VF: 1}), ("pf1_2", {VF: 1})),
        cand(("pf2_1", {VF: 1}), ("pf2_2", {VF: 1})),
    ])
    assert cand(("pf1_1", {VF: 1}), ("pf2_2", {VF: 1})) not in result
    assert cand(("pf2_1", {VF: 1}), ("pf1_2", {VF: 1})) not in result
    assert sorted(w.mappings(ar)["_NIC_AFFINITY"].pop()
                  for ar in body["allocation_requests"]) == ["nic1", "nic2"]


def vifs(api) -> World:
    # nic2's PFs are not drawn ("..."): it has none here.
    w = World(api)
    w.add("compute node")
    w.add("nic1", parent="compute node", traits=["HW_NIC_ROOT"])
    w.add("nic2", parent="compute node", traits=["HW_NIC_ROOT"])
    w.add("pf1_1", parent="nic1", inv={VF: 4})
    w.add("pf1_2", parent="nic1", inv={VF: 4})
    return w


VIFS = ("resources_VIF1=SRIOV_NET_VF:1&resources_VIF2=SRIOV_NET_VF:1"
        "&required_NIC_AFFINITY=CUSTOM_HW_NIC_ROOT"
        "&same_subtree=_VIF1,_VIF2,_NIC_AFFINITY&group_policy=")


def test_spec_isolate_with_same_subtree_needs_two_pfs(api):
    w = vifs(api)
    body = w.get(VIFS + "isolate").json
    assert {w.shape(ar) for ar in body["allocation_requests"]} == {
        cand(("pf1_1", {VF: 1}), ("pf1_2", {VF: 1}))}
    # The one allocation, reachable with the groups either way round.
    assert sorted((w.mappings(ar)["_VIF1"].pop(), w.mappings(ar)["_VIF2"].pop())
                  for ar in body["allocation_requests"]) == [
        ("pf1_1", "pf1_2"), ("pf1_2", "pf1_1")]


def test_spec_none_with_same_subtree_allows_one_pf(api):
    w = vifs(api)
    assert {w.shape(ar) for ar in w.get(VIFS + "none").json["allocation_requests"]} == {
        cand(("pf1_1", {VF: 1}), ("pf1_2", {VF: 1})),
        cand(("pf1_1", {VF: 2})),
        cand(("pf1_2", {VF: 2})),
    }
