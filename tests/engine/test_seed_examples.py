"""Every worked example of the provider-tree and nested-magic documents.

Each test builds the documented environment, issues the documented request
and asserts exactly the documented candidates (and the absence of the
documented non-candidates).
"""

from __future__ import annotations

from collections import Counter

from engine_worlds import World, cand, group, request

from allotment.engine import Inventory, provider_summary_uuids

DISK, MEM, VCPU, VF = "DISK_GB", "MEMORY_MB", "VCPU", "SRIOV_NET_VF"
FPGA = "ACCELERATOR_FPGA"


def test_simple_single_provider_request():
    w = World()
    w.add("RP", inv={
        DISK: Inventory(total=243, used=6),
        MEM: Inventory(total=11206, used=3200),
        VCPU: Inventory(total=16, used=8)})
    cands = w.run(request(group(DISK_GB=1, MEMORY_MB=512, VCPU=1), version=(1, 15)))
    assert [w.amounts(c) for c in cands] == [
        {("RP", DISK, 1), ("RP", MEM, 512), ("RP", VCPU, 1)}]
    assert provider_summary_uuids(w.snapshot(), cands, nested_aware=False) == [
        w.snapshot().providers[0].uuid]


# --- Sharing resource providers -------------------------------------------

def sharing_world() -> World:
    w = World()
    w.add("SS1", inv={DISK: 1000}, aggs=["aggA"], sharing=True)
    w.add("SS2", inv={DISK: 1000}, sharing=True)
    w.add("CN1", inv={VCPU: 8, MEM: 1024, DISK: 1000}, aggs=["aggA"])
    w.add("CN2", inv={VCPU: 8, MEM: 1024, DISK: 1000})
    return w


def test_sharing_provider_serves_tree_in_its_aggregate():
    w = sharing_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500)))
    assert Counter(got) == Counter([
        cand(("CN1", (VCPU, MEM, DISK))),
        cand(("CN2", (VCPU, MEM, DISK))),
        cand(("CN1", (VCPU, MEM)), ("SS1", (DISK,))),
    ])
    assert not any("SS2" in {n for n, _ in c} for c in got)


def nested_sharing_world() -> World:
    w = World()
    w.add("SS1", inv={DISK: 1000}, aggs=["aggA"], sharing=True)
    w.add("CN1", inv={MEM: 1024, DISK: 1000}, aggs=["aggA", "aggB"])
    w.add("NUMA1_1", parent="CN1", inv={VCPU: 8})
    w.add("NUMA1_2", parent="CN1", inv={VCPU: 8})
    w.add("CN2", inv={MEM: 1024, DISK: 1000}, aggs=["aggA"])
    w.add("NUMA2_1", parent="CN2", inv={VCPU: 8}, aggs=["aggB"])
    w.add("NUMA2_2", parent="CN2", inv={VCPU: 8})
    return w


EIGHT = [
    cand(("NUMA1_1", (VCPU,)), ("CN1", (MEM, DISK))),
    cand(("NUMA1_2", (VCPU,)), ("CN1", (MEM, DISK))),
    cand(("NUMA2_1", (VCPU,)), ("CN2", (MEM, DISK))),
    cand(("NUMA2_2", (VCPU,)), ("CN2", (MEM, DISK))),
    cand(("NUMA1_1", (VCPU,)), ("CN1", (MEM,)), ("SS1", (DISK,))),
    cand(("NUMA1_2", (VCPU,)), ("CN1", (MEM,)), ("SS1", (DISK,))),
    cand(("NUMA2_1", (VCPU,)), ("CN2", (MEM,)), ("SS1", (DISK,))),
    cand(("NUMA2_2", (VCPU,)), ("CN2", (MEM,)), ("SS1", (DISK,))),
]


def test_sharing_provider_serves_whole_tree():
    w = nested_sharing_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500)))
    assert Counter(got) == Counter(EIGHT)


def test_aggregate_on_root_spans_tree():
    w = nested_sharing_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500,
                                 member_of=[["aggA"]])))
    assert Counter(got) == Counter(EIGHT)


def test_aggregate_on_non_root_does_not_span_tree():
    w = nested_sharing_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500,
                                 member_of=[["aggB"]])))
    assert Counter(got) == Counter([
        cand(("NUMA1_1", (VCPU,)), ("CN1", (MEM, DISK))),
        cand(("NUMA1_2", (VCPU,)), ("CN1", (MEM, DISK))),
    ])


# --- Traits -----------------------------------------------------------------

SSL = "HW_NIC_ACCEL_SSL"


def nic_world() -> World:
    w = World()
    w.add("CN1", inv={VCPU: 8, MEM: 1024, DISK: 1000})
    w.add("NIC1_1", parent="CN1", inv={VF: 8}, traits=[SSL])
    w.add("NIC1_2", parent="CN1", inv={VF: 8})
    return w


def test_required_trait_on_some_provider_of_the_tree():
    w = nic_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500,
                                 SRIOV_NET_VF=2, required=[SSL])))
    assert got == [cand(("CN1", (VCPU, MEM, DISK)), ("NIC1_1", (VF,)))]


def test_forbidden_trait_on_no_provider_of_the_candidate():
    w = nic_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500,
                                 SRIOV_NET_VF=2, forbidden=[SSL])))
    assert got == [cand(("CN1", (VCPU, MEM, DISK)), ("NIC1_2", (VF,)))]


def test_unrequested_trait_is_ignored():
    w = nic_world()
    got = w.shapes(request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500,
                                 SRIOV_NET_VF=2)))
    assert Counter(got) == Counter([
        cand(("CN1", (VCPU, MEM, DISK)), ("NIC1_1", (VF,))),
        cand(("CN1", (VCPU, MEM, DISK)), ("NIC1_2", (VF,))),
    ])


def test_granular_isolate():
    w = nic_world()
    req = request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500),
                  group("1", SRIOV_NET_VF=1, required=[SSL]),
                  group("2", SRIOV_NET_VF=1), group_policy="isolate")
    cands = w.run(req)
    assert [w.amounts(c) for c in cands] == [{
        ("CN1", VCPU, 1), ("CN1", MEM, 512), ("CN1", DISK, 500),
        ("NIC1_1", VF, 1), ("NIC1_2", VF, 1)}]
    assert w.mapping_names(cands[0]) == {
        "": ["CN1"], "1": ["NIC1_1"], "2": ["NIC1_2"]}


def test_granular_none_lets_one_provider_serve_two_groups():
    w = nic_world()
    req = request(group(VCPU=1, MEMORY_MB=512, DISK_GB=500),
                  group("1", SRIOV_NET_VF=1, required=[SSL]),
                  group("2", SRIOV_NET_VF=1), group_policy="none")
    got = Counter(w.amounts(c) for c in w.run(req))
    local = {("CN1", VCPU, 1), ("CN1", MEM, 512), ("CN1", DISK, 500)}
    assert got == Counter([
        frozenset(local | {("NIC1_1", VF, 1), ("NIC1_2", VF, 1)}),
        frozenset(local | {("NIC1_1", VF, 2)}),
    ])


# --- in_tree ----------------------------------------------------------------

def in_tree_world() -> World:
    w = World()
    w.add("SS1", inv={DISK: 1000}, aggs=["agg"], sharing=True)
    w.add("SS2", inv={DISK: 1000}, aggs=["agg"], sharing=True)
    w.add("CN1", inv={DISK: 1000}, aggs=["agg"])
    w.add("NUMA1_1", parent="CN1", inv={VCPU: 4})
    w.add("NUMA1_2", parent="CN1", inv={VCPU: 4})
    w.add("CN2", inv={DISK: 1000}, aggs=["agg"])
    w.add("NUMA2_1", parent="CN2", inv={VCPU: 4})
    w.add("NUMA2_2", parent="CN2", inv={VCPU: 4})
    return w


def test_in_tree_root():
    w = in_tree_world()
    got = w.shapes(request(group(VCPU=1, DISK_GB=50, in_tree="CN1")))
    assert Counter(got) == Counter([
        cand(("NUMA1_1", (VCPU,)), ("CN1", (DISK,))),
        cand(("NUMA1_2", (VCPU,)), ("CN1", (DISK,))),
    ])


def test_in_tree_non_root_means_its_whole_tree():
    w = in_tree_world()
    got = w.shapes(request(group(VCPU=1, DISK_GB=50, in_tree="NUMA1_1")))
    assert Counter(got) == Counter([
        cand(("NUMA1_1", (VCPU,)), ("CN1", (DISK,))),
        cand(("NUMA1_2", (VCPU,)), ("CN1", (DISK,))),
    ])


def test_unsuffixed_in_tree_does_not_restrict_suffixed_group():
    w = in_tree_world()
    got = w.shapes(request(group(VCPU=1, in_tree="CN1"), group("1", DISK_GB=10)))
    assert Counter(got) == Counter([
        cand(("NUMA1_1", (VCPU,)), (d, (DISK,)))
        for d in ("CN1", "SS1", "SS2")
    ] + [
        cand(("NUMA1_2", (VCPU,)), (d, (DISK,)))
        for d in ("CN1", "SS1", "SS2")
    ])


def test_suffixed_in_tree_pins_sharing_provider():
    w = in_tree_world()
    got = w.shapes(request(group(VCPU=1), group("1", DISK_GB=10, in_tree="SS1")))
    assert Counter(got) == Counter([
        cand((n, (VCPU,)), ("SS1", (DISK,)))
        for n in ("NUMA1_1", "NUMA1_2", "NUMA2_1", "NUMA2_2")
    ])


def test_two_suffixed_in_trees():
    w = in_tree_world()
    got = w.shapes(request(group("1", VCPU=1, in_tree="CN1"),
                           group("2", DISK_GB=10, in_tree="SS1"),
                           group_policy="isolate"))
    assert Counter(got) == Counter([
        cand(("NUMA1_1", (VCPU,)), ("SS1", (DISK,))),
        cand(("NUMA1_2", (VCPU,)), ("SS1", (DISK,))),
    ])


# --- root_required ----------------------------------------------------------

AVX2, SSD = "HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"
MULTI, WIN = "COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_WINDOWS_LICENSE_POOL"


def root_world() -> World:
    w = World()
    w.add("NON_NUMA_CN", inv={VCPU: 8, MEM: 1024, DISK: 1000},
          traits=[AVX2, SSD, MULTI, WIN])
    w.add("NUMA_CN", inv={DISK: 1000}, traits=[SSD, MULTI])
    w.add("NUMA1", parent="NUMA_CN", inv={VCPU: 4, MEM: 1024})
    w.add("NUMA2", parent="NUMA_CN", inv={VCPU: 4, MEM: 1024}, traits=[AVX2])
    return w


def test_root_required():
    w = root_world()
    got = w.shapes(request(
        group("1", VCPU=1, MEMORY_MB=512, required=[AVX2]),
        group("2", DISK_GB=100), group_policy="none",
        root_required={MULTI}))
    assert Counter(got) == Counter([
        cand(("NON_NUMA_CN", (VCPU, MEM, DISK))),
        cand(("NUMA_CN", (DISK,)), ("NUMA2", (VCPU, MEM))),
    ])


def test_root_forbidden():
    w = root_world()
    got = w.shapes(request(
        group("1", VCPU=1, MEMORY_MB=512), group("2", DISK_GB=100),
        group_policy="none", root_forbidden={WIN}))
    assert Counter(got) == Counter([
        cand(("NUMA_CN", (DISK,)), ("NUMA1", (VCPU, MEM))),
        cand(("NUMA_CN", (DISK,)), ("NUMA2", (VCPU, MEM))),
    ])


# --- same_subtree -----------------------------------------------------------

NUMA_ROOT, TYPE1, TYPE2 = "HW_NUMA_ROOT", "CUSTOM_TYPE1", "CUSTOM_TYPE2"


def fpga_world(numa0_vcpu_used: int = 0) -> World:
    w = World()
    w.add("CN")
    w.add("NUMA0", parent="CN", traits=[NUMA_ROOT],
          inv={VCPU: Inventory(total=4, used=numa0_vcpu_used), MEM: 2048})
    w.add("NUMA1", parent="CN", inv={VCPU: 4, MEM: 2048}, traits=[NUMA_ROOT])
    w.add("FPGA0_0", parent="NUMA0", inv={FPGA: 1}, traits=[TYPE1])
    w.add("FPGA1_0", parent="NUMA1", inv={FPGA: 1}, traits=[TYPE1])
    w.add("FPGA1_1", parent="NUMA1", inv={FPGA: 1}, traits=[TYPE2])
    return w


def test_same_subtree_compute_and_accelerator():
    w = fpga_world()
    got = w.shapes(request(
        group("_COMPUTE", VCPU=1, MEMORY_MB=256), group("_ACCEL", ACCELERATOR_FPGA=1),
        group_policy="none", same_subtree=[["_COMPUTE", "_ACCEL"]]))
    assert Counter(got) == Counter([
        cand(("NUMA0", (VCPU, MEM)), ("FPGA0_0", (FPGA,))),
        cand(("NUMA1", (VCPU, MEM)), ("FPGA1_0", (FPGA,))),
        cand(("NUMA1", (VCPU, MEM)), ("FPGA1_1", (FPGA,))),
    ])
    for bad in [cand(("NUMA0", (VCPU, MEM)), ("FPGA1_0", (FPGA,))),
                cand(("NUMA0", (VCPU, MEM)), ("FPGA1_1", (FPGA,))),
                cand(("NUMA1", (VCPU, MEM)), ("FPGA0_0", (FPGA,)))]:
        assert bad not in got


def test_same_subtree_with_partly_used_numa_node():
    # The nested-magic spec's variant: NUMA0 has 2 of its 4 VCPUs in use.
    w = fpga_world(numa0_vcpu_used=2)
    got = w.shapes(request(
        group("_COMPUTE", VCPU=2, MEMORY_MB=512), group("_ACCEL", ACCELERATOR_FPGA=1),
        group_policy="none", same_subtree=[["_COMPUTE", "_ACCEL"]]))
    assert Counter(got) == Counter([
        cand(("NUMA0", (VCPU, MEM)), ("FPGA0_0", (FPGA,))),
        cand(("NUMA1", (VCPU, MEM)), ("FPGA1_0", (FPGA,))),
        cand(("NUMA1", (VCPU, MEM)), ("FPGA1_1", (FPGA,))),
    ])


def test_same_subtree_resourceless_numa_group():
    w = fpga_world()
    cands = w.run(request(
        group("_NUMA", required=[NUMA_ROOT]),
        group("_ACCEL1", ACCELERATOR_FPGA=1, required=[TYPE1]),
        group("_ACCEL2", ACCELERATOR_FPGA=1, required=[TYPE2]),
        group_policy="none", same_subtree=[["_NUMA", "_ACCEL1", "_ACCEL2"]]))
    assert [w.shape(c) for c in cands] == [
        cand(("FPGA1_0", (FPGA,)), ("FPGA1_1", (FPGA,)))]
    # The resourceless group's provider is mapped but allocates nothing.
    assert w.mapping_names(cands[0]) == {
        "_NUMA": ["NUMA1"], "_ACCEL1": ["FPGA1_0"], "_ACCEL2": ["FPGA1_1"]}


NET1, NET2, NIC_ROOT = "CUSTOM_NET1", "CUSTOM_NET2", "HW_NIC_ROOT"


def nics_world() -> World:
    w = World()
    w.add("CN")
    w.add("nic1", parent="CN", traits=[NIC_ROOT])
    w.add("nic2", parent="CN", traits=[NIC_ROOT])
    w.add("pf1_1", parent="nic1", inv={VF: 4}, traits=[NET1])
    w.add("pf1_2", parent="nic1", inv={VF: 4}, traits=[NET2])
    w.add("pf2_1", parent="nic2", inv={VF: 2}, traits=[NET1])
    w.add("pf2_2", parent="nic2", inv={VF: 2}, traits=[NET2])
    return w


def test_two_vfs_on_different_networks_from_same_nic():
    w = nics_world()
    cands = w.run(request(
        group("_VIF_NET1", SRIOV_NET_VF=1, required=[NET1]),
        group("_VIF_NET2", SRIOV_NET_VF=1, required=[NET2]),
        group("_NIC_AFFINITY", required=[NIC_ROOT]),
        group_policy="none",
        same_subtree=[["_VIF_NET1", "_VIF_NET2", "_NIC_AFFINITY"]]))
    got = Counter(w.shape(c) for c in cands)
    assert got == Counter([
        cand(("pf1_1", (VF,)), ("pf1_2", (VF,))),
        cand(("pf2_1", (VF,)), ("pf2_2", (VF,))),
    ])
    assert cand(("pf1_1", (VF,)), ("pf2_2", (VF,))) not in got
    assert cand(("pf2_1", (VF,)), ("pf1_2", (VF,))) not in got
    assert sorted(w.mapping_names(c)["_NIC_AFFINITY"][0] for c in cands) == [
        "nic1", "nic2"]


def vif_world() -> World:
    w = World()
    w.add("CN")
    w.add("nic1", parent="CN", traits=[NIC_ROOT])
    w.add("nic2", parent="CN", traits=[NIC_ROOT])
    w.add("pf1_1", parent="nic1", inv={VF: 4})
    w.add("pf1_2", parent="nic1", inv={VF: 4})
    return w


def vif_request(policy: str):
    return request(
        group("_VIF1", SRIOV_NET_VF=1), group("_VIF2", SRIOV_NET_VF=1),
        group("_NIC_AFFINITY", required=[NIC_ROOT]),
        group_policy=policy,
        same_subtree=[["_VIF1", "_VIF2", "_NIC_AFFINITY"]])


def test_same_subtree_with_isolate_needs_two_pfs():
    w = vif_world()
    cands = w.run(vif_request("isolate"))
    assert {w.amounts(c) for c in cands} == {
        frozenset({("pf1_1", VF, 1), ("pf1_2", VF, 1)})}
    # Both ways round are distinct candidates because their mappings differ.
    assert sorted((w.mapping_names(c)["_VIF1"], w.mapping_names(c)["_VIF2"])
                  for c in cands) == [(["pf1_1"], ["pf1_2"]), (["pf1_2"], ["pf1_1"])]


def test_same_subtree_with_none_allows_same_pf():
    w = vif_world()
    got = {w.amounts(c) for c in w.run(vif_request("none"))}
    assert got == {
        frozenset({("pf1_1", VF, 1), ("pf1_2", VF, 1)}),
        frozenset({("pf1_1", VF, 2)}),
        frozenset({("pf1_2", VF, 2)}),
    }
