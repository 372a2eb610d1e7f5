"""The extension features on the nested-magic document's trees, engine level.

root_member_of, isolate= and anti-affinity in same_subtree are the features
the document specifies beyond what Placement shipped; each test uses one of
its drawn trees.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from engine_worlds import World, cand, group, request, uid
from test_seed_examples import (
    FPGA,
    MEM,
    NUMA_ROOT,
    VCPU,
    VF,
    fpga_world,
    vif_request,
    vif_world,
)

from allotment.engine import Inventory, find_candidates
from allotment.engine import extensions as ext
from allotment.engine.extensions import ExtendedRequest


def run(w: World, req: ExtendedRequest, **kwargs) -> list:
    return list(ext.find_extended_candidates(w.snapshot(), req, **kwargs))


def amounts(w: World, cands) -> set:
    return {w.amounts(c) for c in cands}


# --- plain requests are untouched ------------------------------------------

SEED_REQUESTS = [
    (fpga_world, request(group("_COMPUTE", VCPU=1, MEMORY_MB=256),
                         group("_ACCEL", ACCELERATOR_FPGA=1),
                         group_policy="none", same_subtree=[["_COMPUTE", "_ACCEL"]])),
    (lambda: fpga_world(numa0_vcpu_used=2),
     request(group("_COMPUTE", VCPU=2, MEMORY_MB=512), group("_ACCEL", ACCELERATOR_FPGA=1),
             group_policy="none", same_subtree=[["_COMPUTE", "_ACCEL"]])),
    (fpga_world, request(group("_NUMA", required=[NUMA_ROOT]),
                         group("_ACCEL1", ACCELERATOR_FPGA=1, required=["CUSTOM_TYPE1"]),
                         group("_ACCEL2", ACCELERATOR_FPGA=1, required=["CUSTOM_TYPE2"]),
                         group_policy="none",
                         same_subtree=[["_NUMA", "_ACCEL1", "_ACCEL2"]])),
    (vif_world, vif_request("isolate")),
    (vif_world, vif_request("none")),
]


@pytest.mark.parametrize(("make", "req"), SEED_REQUESTS)
def test_seed_requests_answer_the_same_through_the_extension_engine(make, req):
    w = make()
    assert run(w, ExtendedRequest(req)) == list(find_candidates(w.snapshot(), req))
    for strategy in ("depth-first", "breadth-first"):
        assert run(w, ExtendedRequest(req), strategy=strategy, limit=1) == list(
            find_candidates(w.snapshot(), req, strategy=strategy, limit=1))


def test_default_group_policy_is_the_none_answer():
    w = vif_world()
    none = vif_request("none")
    assert run(w, ExtendedRequest(dataclasses.replace(none, group_policy=None))) == \
        w.run(none)


# --- isolate= ----------------------------------------------------------------

def test_isolate_reproduces_the_documents_isolate_example():
    # "Two VFs from different PFs on the same NIC", with isolate=_VIF1,_VIF2
    # in place of group_policy=isolate: the same single placement.
    w = vif_world()
    base = vif_request("none")
    base = dataclasses.replace(base, group_policy=None)
    got = run(w, ExtendedRequest(base, isolate=(frozenset({"_VIF1", "_VIF2"}),)))
    assert amounts(w, got) == {frozenset({("pf1_1", VF, 1), ("pf1_2", VF, 1)})}
    assert amounts(w, got) == amounts(w, w.run(vif_request("isolate")))


def test_isolate_only_separates_the_listed_groups():
    w = World()
    w.add("CN", inv={VCPU: 8})
    w.add("pf1", parent="CN", inv={VF: 4})
    w.add("pf2", parent="CN", inv={VF: 4})
    base = request(group("_A", SRIOV_NET_VF=1), group("_B", SRIOV_NET_VF=1),
                   group("_C", SRIOV_NET_VF=1))
    got = run(w, ExtendedRequest(base, isolate=(frozenset({"_A", "_B"}),)))
    maps = [tuple(tuple(w.mapping_names(c)[s]) for s in ("_A", "_B", "_C"))
            for c in got]
    assert all(a != b for a, b, _ in maps)
    # _C may join either of them.
    assert Counter(c for _, _, c in maps) == Counter({("pf1",): 2, ("pf2",): 2})


def test_isolate_and_group_policy_are_exclusive():
    with pytest.raises(ValueError):
        ExtendedRequest(vif_request("none"), isolate=(frozenset({"_VIF1", "_VIF2"}),))


# --- same_subtree anti-affinity ------------------------------------------------

def test_accelerator_from_another_numa_node():
    # The document's same_subtree example turned round: same_subtree=_COMPUTE,!_ACCEL
    # wants the FPGA *not* under the NUMA node that gives the VCPUs.
    w = fpga_world()
    base = request(group("_COMPUTE", VCPU=1, MEMORY_MB=256),
                   group("_ACCEL", ACCELERATOR_FPGA=1),
                   same_subtree=[["_COMPUTE"]])
    got = [w.shape(c) for c in run(w, ExtendedRequest(
        base, anti_affinity=((frozenset({"_COMPUTE"}), frozenset({"_ACCEL"})),)))]
    assert Counter(got) == Counter([
        cand(("NUMA0", (VCPU, MEM)), ("FPGA1_0", (FPGA,))),
        cand(("NUMA0", (VCPU, MEM)), ("FPGA1_1", (FPGA,))),
        cand(("NUMA1", (VCPU, MEM)), ("FPGA0_0", (FPGA,))),
    ])
    assert cand(("NUMA0", (VCPU, MEM)), ("FPGA0_0", (FPGA,))) not in got


def test_anti_affinity_with_a_resourceless_numa_group():
    # _NUMA picks a NUMA node that gives the VCPUs (same_subtree=_NUMA,_COMPUTE);
    # the FPGA must come from outside that node (same_subtree=_NUMA,!_ACCEL).
    w = fpga_world()
    base = request(group("_NUMA", required=[NUMA_ROOT]),
                   group("_COMPUTE", VCPU=1),
                   group("_ACCEL", ACCELERATOR_FPGA=1),
                   same_subtree=[["_NUMA", "_COMPUTE"], ["_NUMA"], ["_ACCEL"]])
    got = run(w, ExtendedRequest(
        base, anti_affinity=((frozenset({"_NUMA"}), frozenset({"_ACCEL"})),)))
    pairs = sorted((w.mapping_names(c)["_NUMA"][0], w.mapping_names(c)["_ACCEL"][0])
                   for c in got)
    assert pairs == [("NUMA0", "FPGA1_0"), ("NUMA0", "FPGA1_1"), ("NUMA1", "FPGA0_0")]
    for c in got:
        assert w.mapping_names(c)["_COMPUTE"] == w.mapping_names(c)["_NUMA"]


def test_anti_affinity_against_the_root_leaves_only_sharing_providers():
    w = World()
    w.add("CN", inv={VCPU: 4}, aggs=["agg"])
    w.add("NUMA", parent="CN", inv={MEM: 1024})
    w.add("SS", inv={MEM: 1024}, aggs=["agg"], sharing=True)
    base = request(group("_HOST", VCPU=1), group("_MEM", MEMORY_MB=128),
                   same_subtree=[["_HOST"], ["_MEM"]])
    got = run(w, ExtendedRequest(
        base, anti_affinity=((frozenset({"_HOST"}), frozenset({"_MEM"})),)))
    assert [w.mapping_names(c)["_MEM"] for c in got] == [["SS"]]


# --- root_member_of ------------------------------------------------------------

def az_world() -> World:
    w = World()
    for host, aggs in (("CN1", ["az1"]), ("CN2", ["az2"]), ("CN3", ["az1", "az2"])):
        w.add(host, aggs=aggs)
        w.add(f"{host}_NUMA", parent=host, inv={VCPU: 4}, aggs=["numa-agg"])
    return w


def roots(w: World, cands) -> list[str]:
    return [w.name(c.anchor) for c in cands]


def test_root_member_of_filters_on_the_root_only():
    w = az_world()
    base = request(group(VCPU=1))
    az1 = frozenset({uid("az1")})
    assert roots(w, run(w, ExtendedRequest(base, root_member_of=(az1,)))) == \
        sorted(["CN1", "CN3"], key=uid)
    both = (az1, frozenset({uid("az2")}))
    assert roots(w, run(w, ExtendedRequest(base, root_member_of=both))) == ["CN3"]
    any_of = (frozenset({uid("az1"), uid("az2")}),)
    assert sorted(roots(w, run(w, ExtendedRequest(base, root_member_of=any_of)))) == \
        ["CN1", "CN2", "CN3"]
    # Aggregates of the NUMA nodes do not count: only the root's do.
    numa = (frozenset({uid("numa-agg")}),)
    assert run(w, ExtendedRequest(base, root_member_of=numa)) == []
    assert roots(w, run(w, ExtendedRequest(
        base, forbidden_root_aggs=frozenset({uid("az2")})))) == ["CN1"]


def test_root_member_of_with_limit_counts_only_accepted_candidates():
    w = az_world()
    base = request(group(VCPU=1), limit=1)
    az2 = (frozenset({uid("az2")}),)
    assert len(run(w, ExtendedRequest(base, root_member_of=az2))) == 1


# --- can_split ---------------------------------------------------------------------

def numa_host(numa0_used: int = 2) -> World:
    w = World()
    w.add("CN", inv={"DISK_GB": 100})
    w.add("NUMA0", parent="CN", inv={VCPU: Inventory(total=4, used=numa0_used), MEM: 2048})
    w.add("NUMA1", parent="CN", inv={VCPU: 4, MEM: 2048})
    return w


SPLIT = frozenset({VCPU, MEM})


def split_run(w: World, split=SPLIT, **resources) -> list:
    return sorted(sorted(w.amounts(c)) for c in run(
        w, ExtendedRequest(request(group(**resources)), can_split=split)))


def test_can_split_adds_nothing_when_one_provider_can_take_everything():
    w = numa_host()
    plain = sorted(sorted(w.amounts(c)) for c in w.run(request(group(VCPU=2, MEMORY_MB=512))))
    assert split_run(w, VCPU=2, MEMORY_MB=512) == plain


def test_vcpus_divided_over_numa_nodes_most_free_first():
    # 6 VCPUs: NUMA1 has 4 free, NUMA0 2; memory still fits whole on either.
    w = numa_host()
    assert split_run(w, VCPU=6, MEMORY_MB=1024) == [
        sorted([("NUMA0", VCPU, 2), ("NUMA1", VCPU, 4), ("NUMA0", MEM, 1024)]),
        sorted([("NUMA0", VCPU, 2), ("NUMA1", VCPU, 4), ("NUMA1", MEM, 1024)]),
    ]
    # Without can_split there is nothing.
    assert w.run(request(group(VCPU=6, MEMORY_MB=1024))) == []


def test_both_classes_divided_and_mapped():
    w = numa_host()
    cands = run(w, ExtendedRequest(request(group(VCPU=6, MEMORY_MB=3000)),
                                   can_split=SPLIT))
    # Equal free memory: the node first in UUID order gives the most.
    first, second = sorted(["NUMA0", "NUMA1"], key=uid)
    assert [w.amounts(c) for c in cands] == [frozenset({
        ("NUMA0", VCPU, 2), ("NUMA1", VCPU, 4), (first, MEM, 2048), (second, MEM, 952)})]
    assert w.mapping_names(cands[0]) == {"": ["NUMA0", "NUMA1"]}


def test_split_respects_max_unit_and_step_size():
    w = World()
    w.add("CN")
    w.add("A", parent="CN", inv={VCPU: Inventory(total=8, max_unit=3)})
    w.add("B", parent="CN", inv={VCPU: Inventory(total=8, step_size=2)})
    # A gives at most 3; B multiples of 2: 7 = 3 + 4 (B, most free, first: 6, then A 1).
    got = split_run(w, split=frozenset({VCPU}), VCPU=7)
    assert len(got) == 1
    parts = {name: amount for name, _, amount in got[0]}
    assert sum(parts.values()) == 7
    assert parts["B"] % 2 == 0 and parts["A"] <= 3
    # More than both can give: nothing.
    assert split_run(w, split=frozenset({VCPU}), VCPU=15) == []


def test_split_only_within_one_tree():
    w = World()
    w.add("CN1", inv={VCPU: 4})
    w.add("CN2", inv={VCPU: 4})
    assert split_run(w, split=frozenset({VCPU}), VCPU=6) == []


def test_can_split_needs_classes_of_the_unsuffixed_group():
    with pytest.raises(ValueError):
        ExtendedRequest(request(group("_A", VCPU=1)), can_split=frozenset({VCPU}))
    with pytest.raises(ValueError):
        ExtendedRequest(request(group(VCPU=1)), can_split=frozenset({MEM}))
