"""Property tests of the what-if extensions (engine.whatif), through the
engine's one entry point, on the random worlds and extended requests of the
other property tests (nested trees, granular groups, traits, same_subtree,
sharing providers, isolate, anti-affinity, can_split).

* Ignoring consumers answers exactly what the same request answers over a
  copy of the world without their allocations (candidates in order,
  summaries, explanation), and each candidate displaces exactly the ignored
  consumers its documented definition names.
* With preemption, the candidates are those of the world without every
  preemptible consumer, those fitting as things are first; each eviction
  set is the one the brute-force oracle (tests/harness/evictions.py) finds:
  sufficient, minimal and first in the documented order.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from types import SimpleNamespace

from hypothesis import assume, given
from hypothesis import strategies as st
from test_candidates_properties import PROFILE, RCS, TRAITS, key
from test_extension_properties import ExtOracle, extended_scenarios

from allotment.engine.answer import UnknownName, answer
from allotment.engine.live import LiveSnapshot
from allotment.engine.snapshot import SHARES_TRAIT, ProviderRecord
from allotment.engine.whatif import Holding
from tests.harness.evictions import best_eviction, capacity

CONSUMERS = [f"c0000000-0000-0000-0000-{n:012d}" for n in range(5)]


class Source:
    """The world an answer is worked out from, built from records."""

    def __init__(self, records: list[ProviderRecord]) -> None:
        self.snapshot = LiveSnapshot.build(records)
        self.names = SimpleNamespace(
            classes=frozenset(RCS),
            trait_rank={t: k for k, t in enumerate((*TRAITS, SHARES_TRAIT))})
        self.names_version = 0
        sections: dict = defaultdict(dict)
        self.cache = SimpleNamespace(section=sections.__getitem__)
        self.codec = None


@st.composite
def holdings(draw, world: list[ProviderRecord]) -> dict:
    """Consumers holding parts of what the world's usage is."""
    held: dict = {}
    for rec in world:
        for rc, inv in rec.inventories.items():
            left = inv.used
            while left and draw(st.integers(0, 3)):
                c = draw(st.sampled_from(CONSUMERS))
                amount = draw(st.integers(1, left))
                per_rc = held.setdefault(c, {}).setdefault(rec.uuid, {})
                per_rc[rc] = per_rc.get(rc, 0) + amount
                left -= amount
    return held


@st.composite
def crowded(draw, world: list[ProviderRecord]) -> tuple[list[ProviderRecord], dict]:
    """The world made busier by consumers, up to its capacity, often
    several on one class of one provider: room then has to be made, in
    more than one way."""
    held: dict = {}
    out = []
    for rec in world:
        inventories = {}
        for rc, inv in rec.inventories.items():
            room = capacity(inv) - inv.used
            for _ in range(draw(st.integers(0, 3))):
                if room <= 0:
                    break
                c = draw(st.sampled_from(CONSUMERS))
                amount = draw(st.integers(1, min(room, 4)))
                per_rc = held.setdefault(c, {}).setdefault(rec.uuid, {})
                per_rc[rc] = per_rc.get(rc, 0) + amount
                room -= amount
            inventories[rc] = dataclasses.replace(inv, used=capacity(inv) - room)
        out.append(dataclasses.replace(rec, inventories=inventories))
    return out, held


def without(world: list[ProviderRecord], held: dict, gone) -> list[ProviderRecord]:
    """The world with the allocations of the consumers ``gone`` deleted."""
    out = []
    for rec in world:
        inventories = {
            rc: dataclasses.replace(inv, used=inv.used - sum(
                held[c].get(rec.uuid, {}).get(rc, 0) for c in gone))
            for rc, inv in rec.inventories.items()}
        out.append(dataclasses.replace(rec, inventories=inventories))
    return out


def answered(world, request):
    try:
        found = answer(Source(world), request, explain_limit=20)
    except UnknownName as exc:
        return ("refused", str(exc)), None
    summaries = [(s.uuid, s.parent_uuid, s.root_uuid, s.traits, tuple(s.resources.items()))
                 for s in found.summaries]
    return ([key(c) for c in found.candidates], summaries,
            found.explanation.as_dict()), found


@PROFILE
@given(st.data())
def test_ignoring_consumers_is_answering_without_them(data):
    world, ext = data.draw(extended_scenarios())
    held = data.draw(holdings(world))
    assume(held)
    gone = data.draw(st.lists(st.sampled_from(sorted(held)), min_size=1, unique=True))
    ignored = tuple(Holding(c, held[c]) for c in gone)
    got, found = answered(world, dataclasses.replace(ext, ignored=ignored))
    expected, _ = answered(without(world, held, gone), ext)
    assert got == expected
    if found is None:
        return
    by = {r.uuid: r for r in world}
    for cand, note in zip(found.candidates, found.what_if, strict=True):
        # Those holding some of a class where the candidate's amount does
        # not fit while their allocations stand.
        short = {(p, rc) for p, res in cand.allocations.items() for rc, a in res.items()
                 if by[p].inventories[rc].used + a > capacity(by[p].inventories[rc])}
        assert note.displaces == tuple(sorted(
            c for c in gone if any(held[c].get(p, {}).get(rc) for p, rc in short)))
        assert note.evicts is None


@PROFILE
@given(st.data())
def test_eviction_sets_match_the_oracle(data):
    world, ext = data.draw(extended_scenarios())
    world, held = data.draw(crowded(world))
    # Mostly every consumer is preemptible: room can then be made often.
    kept = data.draw(st.sets(st.sampled_from(sorted(held)), max_size=1)) if held else set()
    victims = sorted(set(held) - kept)
    preemptible = {c: held[c] for c in victims}
    request = dataclasses.replace(
        ext, preemptible=tuple(Holding(c, held[c], consumer_type="SPOT") for c in victims))
    _, found = answered(world, request)
    if found is None:
        return
    keys = [key(c) for c in found.candidates]
    assert len(keys) == len(set(keys)), "duplicate candidates"
    evicting = [bool(note.evicts) for note in found.what_if]
    assert evicting == sorted(evicting), "candidates fitting as they are come first"
    fitting = {k for k, e in zip(keys, evicting, strict=True) if not e}
    assert fitting == ExtOracle(world).solve_ext(ext)
    assert set(keys) == ExtOracle(without(world, held, victims)).solve_ext(ext)
    by = {r.uuid: r for r in world}
    for cand, note in zip(found.candidates, found.what_if, strict=True):
        expected = best_eviction(by, cand.allocations, preemptible)
        assert tuple(h.consumer for h in note.evicts) == expected
        assert note.displaces is None


@PROFILE
@given(st.data())
def test_limit_keeps_the_order(data):
    world, ext = data.draw(extended_scenarios())
    world, held = data.draw(crowded(world))
    limit = data.draw(st.integers(1, 4))
    request = dataclasses.replace(
        ext, preemptible=tuple(Holding(c, h) for c, h in held.items()))
    _, whole = answered(world, request)
    if whole is None:
        return
    limited_ext = dataclasses.replace(
        request, base=dataclasses.replace(request.base, limit=limit))
    _, limited = answered(world, limited_ext)
    assert len(limited.candidates) == min(limit, len(whole.candidates))
    # Those fitting as they are come first, and are never left out for the others.
    fits_whole = sum(1 for n in whole.what_if if not n.evicts)
    fits_limited = sum(1 for n in limited.what_if if not n.evicts)
    assert fits_limited == min(limit, fits_whole)
