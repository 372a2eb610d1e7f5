"""Focused engine behaviours: upstream's edge cases, options and laziness."""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter

import pytest
from engine_worlds import World, cand, group, request, uid

from allotment.engine import (
    Inventory,
    ProviderRecord,
    Snapshot,
    find_candidates,
    provider_summary_uuids,
)
from allotment.engine import anchors as anchors_module
from allotment.engine import plan as plan_module
from allotment.engine import search as search_module

VCPU, DISK, VF, VGPU, MEM = "VCPU", "DISK_GB", "SRIOV_NET_VF", "VGPU", "MEMORY_MB"


def two_hosts() -> World:
    w = World()
    for h in ("CN1", "CN2"):
        w.add(h, inv={VCPU: 4}, traits=["HW_NUMA_ROOT"] if h == "CN2" else [])
        w.add(f"{h}_pf", parent=h, inv={VF: 4}, traits=["CUSTOM_NET"])
    return w


# --- resourceless groups ----------------------------------------------------

def test_resourceless_group_ignores_its_in_tree():
    # Placement only applies in_tree<$S> while looking up inventory, so a
    # resourceless group with in_tree still matches in any tree.
    w = two_hosts()
    got = w.shapes(request(
        group("_V", SRIOV_NET_VF=1),
        group("_R", required=["CUSTOM_NET"], in_tree="CN1"),
        group_policy="none", same_subtree=[["_V", "_R"]]))
    assert Counter(got) == Counter([cand(("CN1_pf", (VF,))), cand(("CN2_pf", (VF,)))])


def test_resourceless_group_needs_traits_or_aggregates_to_match():
    w = two_hosts()
    req = request(group("_V", SRIOV_NET_VF=1), group("_R", forbidden=["HW_NUMA_ROOT"]),
                  group_policy="none", same_subtree=[["_V", "_R"]])
    assert w.run(req) == []


def test_unknown_in_tree_provider_means_no_candidates():
    w = two_hosts()
    assert w.run(request(group(VCPU=1, in_tree="nowhere"))) == []


# --- aggregates ---------------------------------------------------------------

def agg_world() -> World:
    w = World()
    w.add("CN1", inv={VCPU: 4}, aggs=["bad"])
    w.add("CN1_pf", parent="CN1", inv={VF: 4})
    w.add("CN2", inv={VCPU: 4}, aggs=["shared"])
    w.add("CN2_pf", parent="CN2", inv={VF: 4}, aggs=["bad"])
    w.add("CN2_pf2", parent="CN2", inv={VF: 4})
    w.add("SS", inv={DISK: 100}, aggs=["shared"], sharing=True)
    return w


def test_forbidden_aggregate_on_root_excludes_whole_tree():
    w = agg_world()
    got = w.shapes(request(group(VCPU=1, SRIOV_NET_VF=1, forbidden_aggs=["bad"])))
    assert Counter(got) == Counter([cand(("CN2", (VCPU,)), ("CN2_pf2", (VF,)))])


def test_forbidden_aggregate_on_suffixed_group_is_direct():
    w = agg_world()
    got = w.shapes(request(group(VCPU=1), group("1", SRIOV_NET_VF=1, forbidden_aggs=["bad"])))
    assert Counter(got) == Counter([
        cand(("CN1", (VCPU,)), ("CN1_pf", (VF,))),
        cand(("CN2", (VCPU,)), ("CN2_pf2", (VF,))),
    ])


def test_member_of_requires_sharing_provider_itself_in_aggregate():
    w = agg_world()
    w.add("SS_OUT", inv={DISK: 100}, aggs=["other"], sharing=True)
    w.add("CN3", inv={VCPU: 4}, aggs=["shared", "other"])
    got = w.shapes(request(group(VCPU=1, DISK_GB=1, member_of=[["shared"]])))
    assert Counter(got) == Counter([
        cand(("CN2", (VCPU,)), ("SS", (DISK,))),
        cand(("CN3", (VCPU,)), ("SS", (DISK,))),
    ])


def test_member_of_served_by_a_sharing_member_reaches_trees_outside_it(monkeypatch):
    """A group limited to an aggregate can be served by a sharing provider
    in it for a tree that is not: that tree still anchors candidates when
    member_of narrows the anchors walked (engine.plan)."""
    monkeypatch.setattr(plan_module, "MEMBERS_WALKED_PER_ROOT", math.inf)
    w = World()
    w.add("CN1", inv={VCPU: 4}, aggs=["rack"])
    w.add("CN2", inv={VCPU: 4}, aggs=["other"])
    w.add("SS", inv={DISK: 100}, aggs=["rack", "gold"], sharing=True)
    got = w.shapes(request(group("1", VCPU=1), group("2", DISK_GB=1, member_of=[["gold"]]),
                           group_policy="none"))
    assert Counter(got) == Counter([cand(("CN1", (VCPU,)), ("SS", (DISK,)))])


def searched_anchors(monkeypatch) -> list[int]:
    """The anchors the search opens from now on, in order."""
    opened: list[int] = []
    real = search_module.search_anchor

    def spy(plan, r, rng):
        opened.append(r)
        return real(plan, r, rng)

    monkeypatch.setattr(search_module, "search_anchor", spy)
    return opened


def test_member_of_walks_only_the_trees_of_its_members(monkeypatch):
    w = World()
    for h in range(40):
        w.add(f"CN{h}", inv={VCPU: 4}, aggs=["rack"] if h == 7 else ["row"])
        w.add(f"CN{h}_pf", parent=f"CN{h}", inv={VF: 4})
    walked = searched_anchors(monkeypatch)
    got = w.shapes(request(group("1", VCPU=1, member_of=[["rack"]]),
                           group("2", SRIOV_NET_VF=1), group_policy="none"))
    assert got == [cand(("CN7", (VCPU,)), ("CN7_pf", (VF,)))]
    assert len(walked) == 1


def test_suffixed_member_of_is_direct_membership():
    w = agg_world()
    got = w.shapes(request(group("1", SRIOV_NET_VF=1, member_of=[["shared"]])))
    assert got == []


# --- sharing ------------------------------------------------------------------

def test_sharing_only_candidate_is_returned_once():
    w = World()
    w.add("SS", inv={DISK: 100}, aggs=["a"], sharing=True)
    w.add("CN1", inv={VCPU: 1}, aggs=["a"])
    w.add("CN2", inv={VCPU: 1}, aggs=["a"])
    got = w.shapes(request(group(DISK_GB=10)))
    assert got == [cand(("SS", (DISK,)))]


def test_sharing_provider_without_aggregate_serves_only_itself():
    w = World()
    w.add("SS", inv={DISK: 100, VCPU: 2}, sharing=True)
    w.add("CN", inv={VCPU: 2})
    assert w.shapes(request(group(DISK_GB=1, VCPU=1))) == [cand(("SS", (DISK, VCPU)))]


# --- capacity of summed groups -----------------------------------------------

def test_amounts_of_several_groups_are_summed_against_max_unit():
    w = World()
    w.add("LEFT", inv={VGPU: Inventory(total=8, max_unit=8)})
    w.add("RIGHT", inv={VGPU: Inventory(total=8, max_unit=2)})
    req = request(group("1", VGPU=1), group("2", VGPU=1), group("3", VGPU=1),
                  group_policy="none")
    assert [w.amounts(c) for c in w.run(req)] == [{("LEFT", VGPU, 3)}]


def test_amounts_of_several_groups_are_summed_against_capacity():
    w = World()
    w.add("CN", inv={VCPU: Inventory(total=4, used=2)})
    req = request(group(VCPU=1), group("1", VCPU=1), group("2", VCPU=1),
                  group_policy="none")
    assert w.run(req) == []


# --- before 1.29 ---------------------------------------------------------------

def test_nested_blind_before_1_29():
    w = World()
    w.add("CN1", inv={VCPU: 4, MEM: 1024})
    w.add("CN1_numa", parent="CN1", inv={VCPU: 4})
    w.add("CN2", inv={MEM: 1024})
    w.add("CN2_numa", parent="CN2", inv={VCPU: 4})
    req = group(VCPU=1, MEMORY_MB=10)
    assert w.shapes(request(req, version=(1, 28))) == [cand(("CN1", (VCPU, MEM)))]
    assert Counter(w.shapes(request(req, version=(1, 29)))) == Counter([
        cand(("CN1", (VCPU, MEM))),
        cand(("CN1_numa", (VCPU,)), ("CN1", (MEM,))),
        cand(("CN2_numa", (VCPU,)), ("CN2", (MEM,))),
    ])


def test_provider_summaries_by_microversion():
    w = World()
    w.add("CN", inv={MEM: 1024})
    w.add("CN_empty", parent="CN")
    w.add("CN_numa", parent="CN", inv={VCPU: 4})
    snap = w.snapshot()
    cands = list(find_candidates(snap, request(group(VCPU=1, MEMORY_MB=1))))
    nested = provider_summary_uuids(snap, cands, nested_aware=True)
    assert sorted(w.name(u) for u in nested) == ["CN", "CN_empty", "CN_numa"]
    flat = provider_summary_uuids(snap, cands, nested_aware=False)
    assert sorted(w.name(u) for u in flat) == ["CN", "CN_numa"]


def test_nested_provider_summaries_come_tree_by_tree():
    # From 1.29 the summaries list each tree's providers together: roots in
    # UUID order, a tree's providers in UUID order, however their UUIDs
    # interleave with other trees'.
    w = World()
    for h in range(6):
        w.add(f"host{h}", inv={MEM: 1024})
        for c in range(3):
            w.add(f"host{h}-numa{c}", parent=f"host{h}", inv={VCPU: 4})
    snap = w.snapshot()
    cands = list(find_candidates(snap, request(group(VCPU=1, MEMORY_MB=1))))
    got = provider_summary_uuids(snap, cands, nested_aware=True)
    hosts = sorted((u for u in got if "-" not in w.name(u)), key=str)
    expected = []
    for root in hosts:
        tree = [u for u in got if w.name(u).split("-")[0] == w.name(root)]
        expected += sorted(tree)
    assert got == expected
    assert len(got) == 24
    # Before 1.29: only the providers used, in UUID order.
    flat = provider_summary_uuids(snap, cands, nested_aware=False)
    assert flat == sorted(flat) and len(flat) == 24


# --- options ------------------------------------------------------------------

def many_hosts(n: int) -> World:
    w = World()
    for h in range(n):
        w.add(f"cn{h:03d}", inv={VCPU: 4})
        for p in range(2):
            w.add(f"cn{h:03d}_pf{p}", parent=f"cn{h:03d}", inv={VF: 4})
    return w


def test_limit_defaults_to_the_request_limit_and_option_wins():
    w = many_hosts(5)
    req = request(group(VCPU=1), limit=2)
    assert len(w.run(req)) == 2
    assert len(w.run(req, limit=3)) == 3
    assert len(w.run(req, max_candidates=1)) == 1


def test_depth_first_and_breadth_first_orders():
    w = many_hosts(3)
    req = request(group(VCPU=1), group("1", SRIOV_NET_VF=1), group("2", SRIOV_NET_VF=1),
                  group_policy="none")
    depth = [c.anchor for c in w.run(req)]
    breadth = [c.anchor for c in w.run(req, strategy="breadth-first")]
    assert depth == sorted(depth) and Counter(depth) == Counter(breadth)
    assert len(set(breadth[:3])) == 3
    with pytest.raises(ValueError):
        w.run(req, strategy="sideways")


def test_results_are_deterministic_unless_randomized():
    w = many_hosts(20)
    req = request(group(VCPU=1, SRIOV_NET_VF=1))
    first = [c.anchor for c in w.run(req)]
    assert first == [c.anchor for c in w.run(req)]
    shuffled = [c.anchor for c in w.run(req, randomize=True, rng=random.Random(7))]
    assert sorted(shuffled) == sorted(first) and shuffled != first
    picked = [c.anchor for c in w.run(req, limit=3, randomize=True, rng=random.Random(7))]
    assert len(picked) == 3 and picked != first[:3]


def test_search_is_lazy(monkeypatch):
    w = many_hosts(50)
    opened = searched_anchors(monkeypatch)
    req = request(group(VCPU=1), group("1", SRIOV_NET_VF=1), group("2", SRIOV_NET_VF=1),
                  group_policy="none")
    # A limited answer spreads over hosts: it opens as many as it returns
    # candidates, and no more.
    assert len(w.run(req, limit=4)) == 4
    assert len(opened) == 4
    opened.clear()
    assert len(w.run(req, limit=4, strategy="breadth-first")) == 4
    assert len(opened) == 4
    opened.clear()
    # Without a limit, depth-first generation opens one host at a time.
    assert len(list(itertools.islice(find_candidates(w.snapshot(), req), 4))) == 4
    assert len(opened) == 1


def wide_host(gpus: int) -> list[ProviderRecord]:
    w = World()
    w.add("CN", inv={VCPU: 64})
    for i in range(gpus):
        w.add(f"gpu{i}", parent="CN", inv={VGPU: 1})
    return w.records


def test_wide_symmetric_tree_yields_every_permutation():
    snap = Snapshot.build(wide_host(4))
    req = request(*(group(str(i), VGPU=1) for i in range(3)), group_policy="isolate")
    cands = list(find_candidates(snap, req))
    assert len(cands) == 4 * 3 * 2
    assert len({tuple(tuple(c.mappings[s]) for s in "012") for c in cands}) == 24


def test_dead_ends_among_identical_providers_are_not_re_explored(monkeypatch):
    # Eleven isolated groups cannot fit on ten identical GPUs.  With the cheap
    # pre-checks disabled the walk itself must notice: exploring every
    # partial assignment would take 10! steps (minutes), pruning takes ~100.
    snap = Snapshot.build(wide_host(10))
    req = request(*(group(str(i), VGPU=1) for i in range(11)), group_policy="isolate")
    monkeypatch.setattr(anchors_module, "_enough_capacity", lambda plan, slots: True)
    real_build = anchors_module._build_slots

    def without_pigeonhole(plan, r, rng):
        plan.isolate = False
        try:
            return real_build(plan, r, rng)
        finally:
            plan.isolate = True

    monkeypatch.setattr(anchors_module, "_build_slots", without_pigeonhole)
    start = time.perf_counter()
    assert list(find_candidates(snap, req)) == []
    assert time.perf_counter() - start < 5


# --- snapshot construction ----------------------------------------------------

@pytest.mark.parametrize(("records", "message"), [
    ([ProviderRecord(uuid="a"), ProviderRecord(uuid="a")], "duplicate"),
    ([ProviderRecord(uuid="a", parent_uuid="b")], "unknown parent"),
    ([ProviderRecord(uuid="a", parent_uuid="b"), ProviderRecord(uuid="b", parent_uuid="a")],
     "cycle"),
    ([ProviderRecord(uuid="a"), ProviderRecord(uuid="b", parent_uuid="a", root_uuid="b")],
     "claims root"),
])
def test_snapshot_rejects_inconsistent_records(records, message):
    with pytest.raises(ValueError, match=message):
        Snapshot.build(records)


def test_snapshot_indexes():
    w = World()
    w.add("CN", inv={VCPU: 1})
    w.add("numa", parent="CN", inv={VCPU: 1})
    w.add("pf", parent="numa", inv={VF: 1})
    w.add("SS", inv={DISK: 1}, aggs=["a"], sharing=True)
    w.add("CN2", aggs=["a"])
    snap = w.snapshot()
    assert snap.root_uuid(uid("pf")) == uid("CN")
    assert set(snap.tree_uuids(uid("numa"))) == {uid("CN"), uid("numa"), uid("pf")}
    assert snap.has_nested and len(snap) == 5
    ss, cn2 = snap.index[uid("SS")], snap.index[uid("CN2")]
    assert snap.anchors_of_sharing[ss] == {ss, cn2}
    assert snap.sharing_by_anchor[cn2] == (ss,)
    assert snap.is_ancestor_or_self(snap.index[uid("CN")], snap.index[uid("pf")])
    assert Inventory(total=10, reserved=2, allocation_ratio=1.5).capacity == 12
