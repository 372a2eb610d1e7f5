"""Headroom against brute force on random worlds (nested trees, granular
groups, traits, aggregates, same_subtree and sharing providers): the same
repeated placement, made with the brute-force oracle's candidates."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from allotment.engine import Snapshot
from allotment.engine import headroom as engine
from allotment.engine.headroom_trees import Trees
from allotment.engine.live import LiveSnapshot
from allotment.engine.snapshot import SHARES_TRAIT
from tests.engine.test_candidates_properties import PROFILE, Oracle, pid, scenarios


def with_usage(world, used: dict) -> list:
    return [dataclasses.replace(r, inventories={
        rc: dataclasses.replace(inv, used=inv.used + used.get((r.uuid, rc), 0))
        for rc, inv in r.inventories.items()}) for r in world]


def canonical_places(world) -> dict[str, int]:
    """Each provider's place in its tree's canonical order: the root, then
    each child's subtree in turn, children taken by the description of
    their subtree (inventory, usage and traits, sorted; then their
    children's descriptions, sorted), twins by UUID."""
    by = {r.uuid: r for r in world}
    kids: dict = {}
    for r in world:
        if r.parent_uuid is not None:
            kids.setdefault(r.parent_uuid, []).append(r.uuid)

    def own(u):
        invs = by[u].inventories
        return (tuple(sorted((rc, (i.capacity, i.min_unit, i.max_unit, i.step_size, i.total,
                                   i.reserved, i.allocation_ratio)) for rc, i in invs.items())),
                tuple(sorted((rc, i.used) for rc, i in invs.items() if i.used)),
                tuple(sorted(by[u].traits)))

    def label(u):
        return (own(u), tuple(sorted(label(c) for c in kids.get(u, ()))))

    places = {}
    for r in world:
        if r.parent_uuid is None:
            order = []

            def walk(u, order=order):
                order.append(u)
                for c in sorted(kids.get(u, ()), key=lambda c: (label(c), c)):
                    walk(c)

            walk(r.uuid)
            places.update((u, k) for k, u in enumerate(order))
    return places


def place(world, req, roots) -> int:
    """Place ``req`` on ``roots`` together until nothing fits, taking each
    time the candidate first in placement order: its list of (provider's
    place, class, amount) sorted, a provider of its own tree placed by its
    place in the tree's canonical order (as the world was before placing),
    a sharing provider after them by UUID; ties between trees by root
    UUID."""
    places = canonical_places(world)
    used: dict = {}
    count = 0
    while count < 200:
        oracle = Oracle(with_usage(world, used))
        found = []
        for r in roots:
            for totals, _ in oracle.solve_root(req, r):
                key = sorted((0, places[u], rc, a) if oracle.root(u) == r else (1, u, rc, a)
                             for (u, rc), a in totals)
                found.append(((key, r), totals))
        if not found:
            return count
        _, totals = min(found)
        for key, amount in totals:
            used[key] = used.get(key, 0) + amount
        count += 1
    raise AssertionError("too many placements for a small world")


def tree_aggregates(oracle: Oracle, r: str) -> set:
    return {a for u, rec in oracle.by.items() if oracle.root(u) == r for a in rec.aggregates}


# Each example places until full, with the oracle each time: fewer examples.
FEWER = settings(PROFILE, max_examples=min(PROFILE.max_examples, 150))


@FEWER
@given(scenarios())
def test_headroom_matches_repeated_placement_by_brute_force(scenario):
    world, req = scenario
    got = engine.count(Snapshot.build(world), req)
    oracle = Oracle(world)
    roots = oracle.roots()
    per_host = {r: place(world, req, [r]) for r in roots}
    assert got.per_host == {r: n for r, n in per_host.items() if n}
    assert got.total == place(world, req, roots)
    aggregates = {a for r in roots for a in tree_aggregates(oracle, r)}
    want = {}
    for agg in aggregates:
        trees = [r for r in roots if agg in tree_aggregates(oracle, r)
                 and per_host[r]]
        n = place(world, req, trees)
        if n:
            want[agg] = n
    assert got.per_aggregate == want


@PROFILE
@given(scenarios())
def test_largest_fitting_amount_per_class(scenario):
    world, _ = scenario
    oracle = Oracle(world)
    want: dict = {}
    for u, rec in oracle.by.items():
        for rc, inv in rec.inventories.items():
            for amount in range(1, inv.total * 2 + 1):
                if oracle.fits(u, rc, amount) and amount > want.get(rc, 0):
                    want[rc] = amount
    assert engine.largest(Snapshot.build(world)) == want


@FEWER
@given(scenarios(), st.integers(0, 50), st.integers(1, 3))
def test_kept_tree_answers_equal_fresh_ones_after_a_change(scenario, pick, amount):
    world, req = scenario
    snap = LiveSnapshot.build(world)
    memo: dict = {}
    assert engine.count(snap, req, memo=memo) == engine.count(snap, req)
    # Use some of one provider's first class: its tree (and the trees its
    # pool serves) must be counted again, the rest may come from the memo.
    record = world[pick % len(world)]
    if record.inventories:
        rc = sorted(record.inventories)[0]
        snap.add_usage([(record.uuid, rc, amount)])
    assert engine.count(snap, req, memo=memo) == engine.count(snap, req)


def copies(world, offset: int, busier: bool = False, reverse: bool = False,
           served: bool = False) -> tuple[list, dict[str, str]]:
    """``world`` with a copy of every tree that no sharing provider is in
    or serves: the same providers (traits, aggregates, usage, or one more
    of each provider's first class used when ``busier``) under new UUIDs in
    the same order (in the opposite order when ``reverse``); with
    ``served``, the trees sharing providers serve are copied too (in the
    same aggregates, so served by the same ones); and copy root -> original
    root."""
    oracle = Oracle(world)
    sharing = {oracle.root(r.uuid) for r in world if SHARES_TRAIT in r.traits}
    if not served:
        for r in world:
            if SHARES_TRAIT in r.traits:
                sharing |= oracle.served_roots(r.uuid)

    def renamed(u: str) -> str:
        n = int(u[-12:])
        return pid(offset + (999 - n % 1000 if reverse else n))

    new = {r.uuid: renamed(r.uuid) for r in world if oracle.root(r.uuid) not in sharing}

    def used(r):
        if not busier or not r.inventories:
            return r.inventories
        rc = sorted(r.inventories)[0]
        inv = r.inventories[rc]
        return {**r.inventories, rc: dataclasses.replace(inv, used=inv.used + 1)}

    extra = [dataclasses.replace(r, uuid=new[r.uuid], inventories=used(r),
                                 parent_uuid=new.get(r.parent_uuid) if r.parent_uuid else None)
             for r in world if r.uuid in new]
    return world + extra, {new[r]: r for r in oracle.roots() if r in new}


@FEWER
@given(scenarios())
def test_trees_alike_are_counted_alike_and_as_by_brute_force(scenario):
    # Trees with the same providers, usage and shape are counted once per
    # request (engine.headroom_trees): each copy still counts as placing on
    # it does.
    # Copies with one more unit used are not alike.
    world, req = scenario
    doubled, original = copies(world, 1000)
    more, busier = copies(doubled, 2000, busier=True)
    got = engine.count(Snapshot.build(more), req)
    for copy in [*original, *busier]:
        assert got.per_host.get(copy, 0) == place(more, req, [copy])
    if all(g.in_tree is None for g in req.groups):
        for copy, root in original.items():
            assert got.per_host.get(copy, 0) == got.per_host.get(root, 0)
    assert got.total == place(more, req, Oracle(more).roots())


def toggle_aggregate(snap: LiveSnapshot, world, pick: int) -> list:
    """Put one provider in aggregate a1, or take it out (a tree replaced,
    as the world does it): sharing providers may start or stop serving
    trees.  Returns the records as they now are."""
    oracle = Oracle(world)
    record = world[pick % len(world)]
    changed = dataclasses.replace(record, aggregates=record.aggregates ^ {"a1"})
    world = [changed if r.uuid == record.uuid else r for r in world]
    root = oracle.root(record.uuid)
    snap.replace_trees([root], [r for r in world if Oracle(world).root(r.uuid) == root])
    return world


@FEWER
@given(scenarios(), st.lists(st.tuples(st.booleans(), st.integers(0, 50), st.integers(-2, 3)),
                             min_size=1, max_size=4))
def test_kept_counts_follow_usage_and_regrouping(scenario, steps):
    # As the service keeps them: one kept count per request, moved from
    # state to state with the trees of the previous state.
    world, req = scenario
    snap = LiveSnapshot.build(world)
    memo: dict = {}
    trees = Trees(snap)
    assert engine.count(snap, req, memo=memo, trees=trees) == engine.count(snap, req)
    for regroup, pick, amount in steps:
        if regroup:
            world = toggle_aggregate(snap, world, pick)
        else:
            record = world[pick % len(world)]
            if record.inventories:
                rc = sorted(record.inventories)[0]
                held = snap.used.get(record.uuid, {}).get(rc, 0)
                snap.add_usage([(record.uuid, rc, max(amount, -held))])
        if not trees.unchanged(snap):
            trees = Trees(snap, trees)
        assert engine.count(snap, req, memo=memo, trees=trees) == engine.count(snap, req)


@FEWER
@given(scenarios())
def test_trees_alike_under_other_uuids_are_counted_alike(scenario):
    # Placement order follows the providers' places in their tree's
    # canonical order, not their UUIDs: copies whose providers' UUIDs sort
    # the other way round (and copies of trees served by sharing
    # providers, served by the same ones) count as their originals and as
    # placing on them does.
    world, req = scenario
    more, original = copies(world, 1000, reverse=True, served=True)
    got = engine.count(Snapshot.build(more), req)
    for copy, root in original.items():
        assert got.per_host.get(copy, 0) == place(more, req, [copy])
        if all(g.in_tree is None for g in req.groups):
            assert got.per_host.get(copy, 0) == got.per_host.get(root, 0)
    assert got.total == place(more, req, Oracle(more).roots())
