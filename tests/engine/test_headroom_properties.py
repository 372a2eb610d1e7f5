"""Headroom against brute force on random worlds (nested trees, granular
groups, traits, aggregates, same_subtree and sharing providers): the same
repeated placement, made with the brute-force oracle's candidates."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from allotment.engine import Snapshot
from allotment.engine import headroom as engine
from allotment.engine.live import LiveSnapshot
from tests.engine.test_candidates_properties import PROFILE, Oracle, scenarios


def with_usage(world, used: dict) -> list:
    return [dataclasses.replace(r, inventories={
        rc: dataclasses.replace(inv, used=inv.used + used.get((r.uuid, rc), 0))
        for rc, inv in r.inventories.items()}) for r in world]


def place(world, req, roots) -> int:
    """Place ``req`` on ``roots`` together until nothing fits, taking each
    time the candidate whose allocations sort first."""
    used: dict = {}
    count = 0
    while count < 200:
        oracle = Oracle(with_usage(world, used))
        found = set()
        for r in roots:
            found |= oracle.solve_root(req, r)
        if not found:
            return count
        totals = min((sorted(totals) for totals, _ in found))
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
