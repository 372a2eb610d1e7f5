"""A LiveSnapshot changed tree by tree answers exactly as one built from scratch.

Random worlds go through random sequences of changes (new trees, deleted
trees, changed inventories, traits and aggregates, subtrees moved between
trees or made roots, usage moving up and down).  After every change the live
snapshot must give the same candidates, in the same order, and the same
provider summaries as ``Snapshot.build`` over the same records with the same
usage, for random requests.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allotment.engine import (
    SHARES_TRAIT,
    AllocationCandidatesRequest,
    Inventory,
    ProviderRecord,
    SearchGroup,
    Snapshot,
    anchors,
    find_candidates,
    provider_summary_uuids,
    search,
    unsuffixed,
)
from allotment.engine.live import LiveSnapshot
from tests.engine.test_candidates_properties import (
    RCS,
    pid,
    provider_bits,
    requests,
    worlds,
)

PROFILE = settings.get_profile(os.environ.get("ENGINE_HYPOTHESIS_PROFILE", "engine-ci"))
# Each example replays several changes: fewer of them in the default profile.
EXAMPLES = (min(PROFILE.max_examples, 100)
            if PROFILE is settings.get_profile("engine-ci") else PROFILE.max_examples)


def _tree_of(records: dict[str, ProviderRecord], uuid: str) -> str:
    while records[uuid].parent_uuid is not None:
        uuid = records[uuid].parent_uuid
    return uuid


def _members(records: dict[str, ProviderRecord], root: str) -> list[str]:
    return [u for u in records if _tree_of(records, u) == root]


def _subtree(records: dict[str, ProviderRecord], top: str) -> set[str]:
    out = {top}
    grew = True
    while grew:
        grew = False
        for u, r in records.items():
            if r.parent_uuid in out and u not in out:
                out.add(u)
                grew = True
    return out


def _static(rec: ProviderRecord) -> ProviderRecord:
    """The record without usage (usage travels as deltas)."""
    return replace(rec, root_uuid=None, inventories={
        rc: replace(inv, used=0) for rc, inv in rec.inventories.items()})


@st.composite
def changes(draw, records: dict[str, ProviderRecord], counter: list[int]):
    """One change: (kind, new records dict, roots to replace, usage deltas)."""
    uuids = sorted(records)
    kind = draw(st.sampled_from(
        ["edit", "edit", "new_tree", "delete_tree", "move", "usage", "usage", "unparent"]
        if uuids else ["new_tree"]))
    out = dict(records)
    if kind == "usage":
        deltas = []
        for _ in range(draw(st.integers(1, 4))):
            deltas.append((draw(st.sampled_from(uuids)), draw(st.sampled_from(RCS)),
                           draw(st.integers(-2, 3))))
        return kind, out, [], deltas
    if kind == "new_tree":
        counter[0] += 1
        root = pid(1000 + counter[0])
        inv, traits, aggs = draw(provider_bits())
        if draw(st.integers(0, 4)) == 0:
            traits = traits | {SHARES_TRAIT}
        out[root] = ProviderRecord(uuid=root, name=root, inventories=inv,
                                   traits=traits, aggregates=aggs)
        for _ in range(draw(st.integers(0, 2))):
            counter[0] += 1
            child = pid(1000 + counter[0])
            inv, traits, aggs = draw(provider_bits())
            out[child] = ProviderRecord(uuid=child, name=child, parent_uuid=root,
                                        inventories=inv, traits=traits, aggregates=aggs)
        return kind, out, [root], []
    target = draw(st.sampled_from(uuids))
    root = _tree_of(records, target)
    if kind == "delete_tree":
        for u in _members(records, root):
            del out[u]
        return kind, out, [root], []
    if kind == "edit":
        inv, traits, aggs = draw(provider_bits())
        old = records[target]
        what = draw(st.sampled_from(["inv", "traits", "aggs", "all"]))
        out[target] = replace(
            old, generation=old.generation + 1,
            inventories=inv if what in ("inv", "all") else old.inventories,
            traits=(traits | (old.traits & {SHARES_TRAIT})
                    if what in ("traits", "all") else old.traits),
            aggregates=aggs if what in ("aggs", "all") else old.aggregates)
        return kind, out, [root], []
    if kind == "unparent":
        if records[target].parent_uuid is None:
            return kind, out, [], []
        out[target] = replace(records[target], parent_uuid=None)
        return kind, out, [root], []
    # Move a subtree under a provider of another (or the same) tree.
    moving = _subtree(records, target)
    candidates = [u for u in uuids if u not in moving]
    if not candidates:
        return kind, out, [], []
    new_parent = draw(st.sampled_from(candidates))
    out[target] = replace(records[target], parent_uuid=new_parent)
    return kind, out, [root, _tree_of(records, new_parent)], []


@settings(PROFILE, max_examples=EXAMPLES)
@given(st.data())
def test_live_snapshot_matches_a_fresh_build(data):
    start = data.draw(worlds())
    records = {r.uuid: _static(r) for r in start}
    usage: dict[tuple[str, str], int] = {}
    for r in start:
        for rc, inv in r.inventories.items():
            if inv.used:
                usage[(r.uuid, rc)] = inv.used
    live = LiveSnapshot.build(
        [replace(rec, inventories={rc: replace(inv, used=usage.get((u, rc), 0))
                                   for rc, inv in rec.inventories.items()})
         for u, rec in records.items()])
    counter = [0]
    asked: list = []
    for _ in range(data.draw(st.integers(1, 6))):
        kind, new, roots, deltas = data.draw(changes(records, counter))
        if kind == "usage":
            live.add_usage(deltas)
            for u, rc, d in deltas:
                usage[(u, rc)] = usage.get((u, rc), 0) + d
        else:
            # Whole trees, as storage reloads them: every provider now in a
            # tree that holds a provider of a touched tree (or a new one).
            touched = set(roots)
            moved = {u for u in new
                     if u not in records or _tree_of(records, u) in touched}
            now_in = {_tree_of(new, u) for u in moved}
            tree_records = [new[u] for u in new if _tree_of(new, u) in now_in]
            live.replace_trees(roots, tree_records)
            for u in set(records) - set(new):
                for key in [k for k in usage if k[0] == u]:
                    del usage[key]
            records = new
        _compare(live, records, usage, data, asked)


def _compare(live: LiveSnapshot, records, usage, data, asked: list) -> None:
    used: dict[str, dict[str, int]] = {}
    for (u, rc), n in usage.items():
        if n and u in records:
            used.setdefault(u, {})[rc] = n
    fresh = Snapshot.build(list(records.values())).with_usage(used)
    assert sorted(live.index) == sorted(records)
    assert [live.uuids[r] for r in live.roots] == [fresh.uuids[r] for r in fresh.roots]
    # Kept as trees come and go, summed afresh by the built one.
    assert live.generations_total() == fresh.generations_total()
    for u in records:
        assert live.resources_of(u) == fresh.resources_of(u)
        assert live.root_uuid(u) == fresh.root_uuid(u)
        assert live.parent_uuid_of(u) == fresh.parent_uuid_of(u)
        assert live.get(u) == fresh.get(u)
        assert set(live.tree_uuids(u)) == set(fresh.tree_uuids(u))
    assert {rc: sorted(live.uuids[i] for i in m) for rc, m in live.by_rc.items()} == {
        rc: sorted(fresh.uuids[i] for i in m) for rc, m in fresh.by_rc.items()}
    assert sorted(map(sorted, live.root_trait_sets())) == sorted(
        map(sorted, {fresh.traits[r] for r in fresh.roots}))
    shared = {live.uuids[s]: sorted(live.uuids[r] for r in a)
              for s, a in live.anchors_of_sharing.items()}
    assert shared == {fresh.uuids[s]: sorted(fresh.uuids[r] for r in a)
                      for s, a in fresh.anchors_of_sharing.items()}
    uuids = sorted(records) or [pid(1)]
    # Requests asked before the change are asked again: what the live
    # snapshot remembers of their answers (see LiveSnapshot.kept_answers)
    # must follow every change.
    fresh_ones = [data.draw(requests(uuids)) for _ in range(3)]
    for request in asked[-3:] + fresh_ones:
        # A limited request takes a prefix of some trees' answers (kept for
        # the next request, which resumes the search after it).
        limit = data.draw(st.integers(1, 4))
        assert (list(find_candidates(live, request, limit=limit, strategy="breadth-first"))
                == list(find_candidates(fresh, request, limit=limit,
                                        strategy="breadth-first")))
        for strategy in ("depth-first", "breadth-first"):
            got = list(find_candidates(live, request, strategy=strategy))
            want = list(find_candidates(fresh, request, strategy=strategy))
            assert got == want
        assert (provider_summary_uuids(live, got, nested_aware=request.nested_aware)
                == provider_summary_uuids(fresh, want, nested_aware=request.nested_aware))
    asked.extend(fresh_ones)


def test_single_provider_answers_are_kept_until_their_host_changes():
    flat = {"VCPU": Inventory(total=4), "MEMORY_MB": Inventory(total=1024)}
    live = LiveSnapshot.build([ProviderRecord(uuid=pid(i), inventories=flat)
                               for i in range(1, 6)])
    request = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 2, "MEMORY_MB": 512}),))
    first = list(find_candidates(live, request))
    assert [c.anchor for c in first] == [pid(i) for i in range(1, 6)]
    again = list(find_candidates(live, request))
    # Unchanged hosts: the very same candidates, with what renderers kept.
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(c.reused for c in again)
    # Host 3 fills up: it drops out, the others are still the same objects.
    live.add_usage([(pid(3), "VCPU", 3)])
    after = list(find_candidates(live, request))
    assert [c.anchor for c in after] == [pid(i) for i in (1, 2, 4, 5)]
    assert all(c is first[[x.anchor for x in first].index(c.anchor)] for c in after)
    # It empties again: back, as a new candidate equal to the first one.
    live.add_usage([(pid(3), "VCPU", -3)])
    back = list(find_candidates(live, request))
    assert back == first and back[2] is not first[2]
    # Another kind of request is remembered apart.
    bigger = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 4}),))
    assert len(list(find_candidates(live, bigger))) == 5
    live.add_usage([(pid(1), "VCPU", 1)])
    assert [c.anchor for c in find_candidates(live, bigger)] == [pid(i) for i in (2, 3, 4, 5)]
    assert [c.anchor for c in find_candidates(live, request)] == [pid(i) for i in range(1, 6)]


def test_an_extension_filter_on_roots_stays_out_of_kept_answers():
    from allotment.engine import extensions
    from allotment.engine.extensions import ExtendedRequest

    inv = {"VCPU": Inventory(total=4)}
    live = LiveSnapshot.build([
        ProviderRecord(uuid=pid(1), inventories=inv, traits=frozenset({"CUSTOM_A"}),
                       aggregates=frozenset({"agg"})),
        ProviderRecord(uuid=pid(2), inventories=inv, traits=frozenset({"CUSTOM_A"}))])
    request = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 1}),),
        root_required=frozenset({"CUSTOM_A"}))
    narrowed = ExtendedRequest(request, root_member_of=(frozenset({"agg"}),))
    assert [c.anchor for c in extensions.find_extended_candidates(live, narrowed)] == [pid(1)]
    # The same request without root_member_of: both roots.
    assert [c.anchor for c in find_candidates(live, request)] == [pid(1), pid(2)]
    assert [c.anchor for c in extensions.find_extended_candidates(live, narrowed)] == [pid(1)]


def test_tree_answers_are_kept_until_a_provider_of_the_tree_or_its_sharing_changes():
    numa = {"VCPU": Inventory(total=4)}
    records = []
    for h in (1, 2, 3):
        root = pid(10 * h)
        records.append(ProviderRecord(uuid=root, inventories={"MEMORY_MB": Inventory(total=64)},
                                      aggregates=frozenset({f"agg{h}"})))
        records += [ProviderRecord(uuid=pid(10 * h + n), parent_uuid=root, inventories=numa)
                    for n in (1, 2)]
    # A disk pool shared with host 3 only.
    records.append(ProviderRecord(uuid=pid(99), inventories={"DISK_GB": Inventory(total=100)},
                                  traits=frozenset({SHARES_TRAIT}),
                                  aggregates=frozenset({"agg3"})))
    live = LiveSnapshot.build(records)
    request = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 1, "MEMORY_MB": 8}),))
    first = list(find_candidates(live, request))
    assert len(first) == 6
    again = list(find_candidates(live, request))
    assert all(a is b for a, b in zip(first, again, strict=True))

    def of_host(cands, h):
        return [c for c in cands if c.anchor == pid(10 * h)]

    # A NUMA node of host 2 fills up: host 2 is searched again, the rest kept.
    live.add_usage([(pid(21), "VCPU", 4)])
    after = list(find_candidates(live, request))
    assert len(of_host(after, 2)) == 1
    assert all(c in first and any(c is f for f in first)
               for c in of_host(after, 1) + of_host(after, 3))
    # The sharing provider serving host 3 changes: host 3 is searched again
    # (with disk asked for, its candidates take it from the pool).
    with_disk = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 1, "DISK_GB": 60}),))
    assert [c.anchor for c in find_candidates(live, with_disk)] == [pid(30)] * 2
    live.add_usage([(pid(99), "DISK_GB", 50)])
    assert list(find_candidates(live, with_disk)) == []
    live.add_usage([(pid(99), "DISK_GB", -50)])
    assert [c.anchor for c in find_candidates(live, with_disk)] == [pid(30)] * 2
    # A new provider in host 1's tree is seen at once.
    live.replace_trees([pid(10)], [*(r for r in records if r.uuid in (pid(10), pid(11), pid(12))),
                                   ProviderRecord(uuid=pid(13), parent_uuid=pid(10),
                                                  inventories=numa)])
    assert len(of_host(list(find_candidates(live, request)), 1)) == 3
    fresh = Snapshot.build([*(r for r in records if r.uuid not in (pid(10), pid(11), pid(12))),
                            *(r for r in records if r.uuid in (pid(10), pid(11), pid(12))),
                            ProviderRecord(uuid=pid(13), parent_uuid=pid(10), inventories=numa)])
    fresh = fresh.with_usage({pid(21): {"VCPU": 4}})
    assert list(find_candidates(live, request)) == list(find_candidates(fresh, request))
    # Requests with suffixed groups are kept per tree too.
    granular = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"MEMORY_MB": 8}),
                         SearchGroup(suffix="_A", resources={"VCPU": 1}),
                         SearchGroup(suffix="_B", resources={"VCPU": 1})),
        group_policy="isolate")
    before = list(find_candidates(live, granular))
    assert before == list(find_candidates(fresh, granular))
    live.add_usage([(pid(12), "VCPU", 4)])
    fresh = fresh.with_usage({pid(21): {"VCPU": 4}, pid(12): {"VCPU": 4}})
    after = list(find_candidates(live, granular))
    assert after == list(find_candidates(fresh, granular)) and after != before
    # A request that stops early keeps nothing partial.
    live.add_usage([(pid(12), "VCPU", -4)])
    fresh = fresh.with_usage({pid(21): {"VCPU": 4}})
    for limit in (1, 2, None, 1):
        assert (list(find_candidates(live, granular, limit=limit, strategy="breadth-first"))
                == list(find_candidates(fresh, granular, limit=limit,
                                        strategy="breadth-first")))
        assert list(find_candidates(live, granular)) == list(find_candidates(fresh, granular))


def test_kept_answers_with_suffixed_groups_are_finished_candidates():
    # Hosts 1-2: a root with memory and two NUMA nodes; host 3 also has a disk
    # pool shared with it, which the unsuffixed group may take disk from.
    records = []
    for h in (1, 2, 3):
        root = pid(10 * h)
        records.append(ProviderRecord(uuid=root, inventories={"MEMORY_MB": Inventory(total=64)},
                                      aggregates=frozenset({f"agg{h}"})))
        records += [ProviderRecord(uuid=pid(10 * h + n), parent_uuid=root,
                                   inventories={"VCPU": Inventory(total=4)}) for n in (1, 2)]
    records.append(ProviderRecord(uuid=pid(99), inventories={"DISK_GB": Inventory(total=100)},
                                  traits=frozenset({SHARES_TRAIT}),
                                  aggregates=frozenset({"agg3"})))
    live = LiveSnapshot.build(records)
    granular = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"MEMORY_MB": 8}),
                         SearchGroup(suffix="_A", resources={"VCPU": 1})))
    second = list(find_candidates(live, granular))
    # Kept finished, with room for what renderers make of them: asked again,
    # the very same objects.
    assert len(second) == 6 and all(c.reused for c in second)
    third = list(find_candidates(live, granular))
    assert all(a is b for a, b in zip(second, third, strict=True))
    # A NUMA node of host 2 fills up: only host 2's candidates are new.
    live.add_usage([(pid(21), "VCPU", 4)])
    after = list(find_candidates(live, granular))
    assert [c.anchor for c in after] == [pid(10)] * 2 + [pid(20)] + [pid(30)] * 2
    assert all(any(c is s for s in second) for c in after if c.anchor != pid(20))
    fresh = Snapshot.build(records).with_usage({pid(21): {"VCPU": 4}})
    assert after == list(find_candidates(fresh, granular))
    # Candidates the pool alone can give (each suffixed group from the pool,
    # reachable from more than one anchor) stay deduplicated, never finished
    # per tree.
    pooled = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 1}),
                         SearchGroup(suffix="_D", resources={"DISK_GB": 10})))
    for _ in range(3):
        got = list(find_candidates(live, pooled))
        assert got == list(find_candidates(fresh, pooled))


def test_limited_requests_keep_the_prefix_they_took_and_later_ones_resume_it():
    # Three hosts, each with four NUMA nodes: four candidates per host.
    records = []
    for h in (1, 2, 3):
        root = pid(10 * h)
        records.append(ProviderRecord(uuid=root, inventories={"MEMORY_MB": Inventory(total=64)}))
        records += [ProviderRecord(uuid=pid(10 * h + n), parent_uuid=root,
                                   inventories={"VCPU": Inventory(total=4)}) for n in (1, 2, 3, 4)]
    live = LiveSnapshot.build(records)
    fresh = Snapshot.build(records)
    for groups in ((SearchGroup(suffix="", resources={"VCPU": 1, "MEMORY_MB": 8}),),
                   (SearchGroup(suffix="", resources={"MEMORY_MB": 8}),
                    SearchGroup(suffix="_A", resources={"VCPU": 1}))):
        request = AllocationCandidatesRequest.for_microversion((1, 39), groups=groups)
        calls = []
        real = anchors._AnchorSearch.walk if len(groups) > 1 else unsuffixed.unsuffixed_product

        def counted(*args, _real=real, _calls=calls, **kwargs):
            _calls.append(1)
            return _real(*args, **kwargs)

        target = (anchors._AnchorSearch, "walk") if len(groups) > 1 else (
            unsuffixed, "unsuffixed_product")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(*target, counted)
            # One candidate per host: each tree's search stops after one.
            first = list(find_candidates(live, request, limit=3, strategy="breadth-first"))
            assert [c.anchor for c in first] == [pid(10), pid(20), pid(30)]
            searched = len(calls)
            assert searched >= 3
            # The same again: answered from the kept prefixes, no search,
            # not even a tree's search set up to hand its prefix out.
            opened = []
            mp.setattr(search, "search_anchor",
                       lambda *a, _real=search.search_anchor, _opened=opened: (
                           _opened.append(1) or _real(*a)))
            again = list(find_candidates(live, request, limit=3, strategy="breadth-first"))
            assert again == first and len(calls) == searched and opened == []
            assert all(a is b for a, b in zip(first, again, strict=True))
            # More than the prefixes hold: the searches resume after them.
            for limit in (5, None, 7):
                got = list(find_candidates(live, request, limit=limit, strategy="breadth-first"))
                assert got == list(find_candidates(fresh, request, limit=limit,
                                                   strategy="breadth-first"))
            # The whole answers are kept now: no more searching, and in
            # either order no tree's search is even set up.
            want = list(find_candidates(fresh, request, limit=7, strategy="breadth-first"))
            searched = len(calls)
            del opened[:]
            assert len(list(find_candidates(live, request))) == 12
            assert list(find_candidates(live, request, limit=7, strategy="breadth-first")) == want
            assert len(calls) == searched and opened == []
        # A change to host 2 drops its prefix; the others stay.
        live.add_usage([(pid(21), "VCPU", 4)])
        fresh = fresh.with_usage({pid(21): {"VCPU": 4}})
        assert (list(find_candidates(live, request, limit=4, strategy="breadth-first"))
                == list(find_candidates(fresh, request, limit=4, strategy="breadth-first")))
        live.add_usage([(pid(21), "VCPU", -4)])
        fresh = Snapshot.build(records)


def test_an_answer_bigger_than_the_budget_leaves_a_prefix_in_every_tree(monkeypatch):
    from allotment.engine import kept

    # Six hosts of four NUMA nodes (30 providers), two groups that may share
    # a node: 16 candidates per host, 96 in all, against a budget of 30.
    monkeypatch.setattr(kept, "MIN_BUDGET", 12)
    records = []
    for h in range(1, 7):
        root = pid(10 * h)
        records.append(ProviderRecord(uuid=root, inventories={"MEMORY_MB": Inventory(total=64)}))
        records += [ProviderRecord(uuid=pid(10 * h + n), parent_uuid=root,
                                   inventories={"VCPU": Inventory(total=4)}) for n in (1, 2, 3, 4)]
    live = LiveSnapshot.build(records)
    request = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(SearchGroup(suffix="", resources={"MEMORY_MB": 8}),
                         SearchGroup(suffix="_A", resources={"VCPU": 1}),
                         SearchGroup(suffix="_B", resources={"VCPU": 1})),
        group_policy="none")
    assert live._kept.budget() == 30 and live._kept.per_tree() == 5
    whole = list(find_candidates(live, request))
    assert len(whole) == 96
    assert list(find_candidates(live, request)) == whole
    # Every tree kept its share (five results), not the first tree all of
    # its own: a request taking one or two of each tree searches none.
    calls = []
    real = anchors._AnchorSearch.walk

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(anchors._AnchorSearch, "walk", counted)
    for limit in (6, 12):
        got = list(find_candidates(live, request, limit=limit, strategy="breadth-first"))
        assert len(got) == limit and len({c.anchor for c in got}) == 6
    assert calls == []
    assert list(find_candidates(live, request)) == whole


def test_replace_trees_moves_a_subtree_and_reanchors_sharing():
    inv = {"VCPU": Inventory(total=4)}
    records = [
        ProviderRecord(uuid=pid(1), inventories=inv, aggregates=frozenset({"a1"})),
        ProviderRecord(uuid=pid(2), parent_uuid=pid(1), inventories=inv),
        ProviderRecord(uuid=pid(3), inventories=inv),
        ProviderRecord(uuid=pid(9), inventories={"DISK_GB": Inventory(total=10)},
                       traits=frozenset({SHARES_TRAIT}), aggregates=frozenset({"a1"})),
    ]
    live = LiveSnapshot.build(records)
    slot = live.index[pid(2)]
    assert live.sharing_by_anchor[live.index[pid(1)]] == (live.index[pid(9)],)
    # pid(2) moves under pid(3); the sharing provider's aggregate moves too.
    live.replace_trees([pid(1), pid(3)], [
        ProviderRecord(uuid=pid(1), inventories=inv),
        ProviderRecord(uuid=pid(3), inventories=inv, aggregates=frozenset({"a1"})),
        ProviderRecord(uuid=pid(2), parent_uuid=pid(3), inventories=inv),
    ])
    assert live.index[pid(2)] == slot, "a provider keeps its slot"
    assert live.root_uuid(pid(2)) == pid(3)
    assert live.depth[slot] == 1
    assert live.index[pid(1)] not in live.sharing_by_anchor
    assert live.sharing_by_anchor[live.index[pid(3)]] == (live.index[pid(9)],)
    # Deleting a tree frees its slots for the next provider.
    live.replace_trees([pid(1)], [])
    assert pid(1) not in live.index
    live.replace_trees([], [ProviderRecord(uuid=pid(5), inventories=inv)])
    assert live.uuids[live.index[pid(5)]] == pid(5)
    assert len(live) == 4
    assert [live.uuids[r] for r in live.roots] == [pid(3), pid(5), pid(9)]


def test_a_provider_moved_out_of_a_tree_not_named_leaves_the_rest_of_it():
    inv = {"VCPU": Inventory(total=4)}
    live = LiveSnapshot.build([
        ProviderRecord(uuid=pid(1), inventories=inv),
        ProviderRecord(uuid=pid(2), parent_uuid=pid(1), inventories=inv),
        ProviderRecord(uuid=pid(3), parent_uuid=pid(1), inventories=inv),
        ProviderRecord(uuid=pid(4), inventories=inv),
    ])
    live.replace_trees([pid(4)], [
        ProviderRecord(uuid=pid(4), inventories=inv),
        ProviderRecord(uuid=pid(3), parent_uuid=pid(4), inventories=inv),
    ])
    assert sorted(live.tree_uuids(pid(1))) == [pid(1), pid(2)]
    assert sorted(live.tree_uuids(pid(4))) == [pid(3), pid(4)]
    assert live.is_leaf(live.index[pid(1)]) is False
    assert live.is_leaf(live.index[pid(2)])


def test_replace_trees_refuses_records_with_unknown_parents():
    live = LiveSnapshot.build([])
    with pytest.raises(ValueError):
        live.replace_trees([], [ProviderRecord(uuid=pid(2), parent_uuid=pid(1))])


def test_usage_deltas_cancel_out():
    live = LiveSnapshot.build([ProviderRecord(
        uuid=pid(1), inventories={"VCPU": Inventory(total=4, used=2)})])
    live.add_usage([(pid(1), "VCPU", -2), (pid(1), "VCPU", 1), (pid(1), "VCPU", -1)])
    assert live.used == {}
    assert live.resources_of(pid(1)) == {"VCPU": (4, 0)}



def test_revisions_are_never_reused_not_even_by_a_rebuilt_snapshot():
    """Renderers cache by revision across snapshots: a number is one state."""
    inv = {"VCPU": Inventory(total=4)}
    first = LiveSnapshot.build([ProviderRecord(uuid=pid(1), inventories=inv)])
    seen = {first.revision(pid(1))}
    first.add_usage([(pid(1), "VCPU", 1)])
    assert first.revision(pid(1)) not in seen
    seen.add(first.revision(pid(1)))
    again = LiveSnapshot.build([ProviderRecord(uuid=pid(1), inventories=inv)])
    assert again.revision(pid(1)) not in seen
