"""What-if answers: the world without some consumers' allocations.

Two extensions of ``GET /allocation_candidates`` (docs/extensions/
ignore-consumers.md and preempt.md) ask about a world that is not the
current one:

* ``ignore_consumers``: the world in which some consumers hold nothing.
  Each candidate then says which of them it *displaces*: those holding some
  of a class on a provider where the candidate's amount of that class does
  not fit while their allocations stand.
* ``preempt``: candidates that fit once some preemptible consumers are
  removed, each with its *eviction set*: the smallest set of preemptible
  consumers holding allocations on the candidate's providers whose removal
  makes the candidate fit; among sets of that size the one freeing the
  least capacity beyond what is needed (each class on each provider counted
  as a fraction of that provider's capacity of it, summed over everything
  the set's consumers hold), then the one whose sorted consumer UUIDs sort
  first.

The caller reads the consumers' allocations (the engine knows usage, not
consumers) and hands them in as :class:`Holding` values, the preemptible
ones as a :class:`Preemptible` the world keeps from one request to the
next (allotment.world.preemptible).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations

from allotment.engine.live import LiveSnapshot
from allotment.engine.plan import Candidate
from allotment.engine.snapshot import CAPACITY, Snapshot

# Sets looked at, at most, to find one candidate's eviction set: the search
# is exact, and a candidate whose search would look at more is not offered.
EVICTION_BUDGET = 20_000

Pair = tuple[str, str]


@dataclass(frozen=True)
class Holding:
    """One consumer and what it holds: ``allocations`` maps provider UUID
    to ``{resource class: amount}``."""

    consumer: str
    allocations: Mapping[str, Mapping[str, int]]
    generation: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None

    def pairs(self) -> Iterable[tuple[str, str, int]]:
        for provider, resources in self.allocations.items():
            for rc, amount in resources.items():
                yield provider, rc, amount

    def __hash__(self) -> int:
        return hash(self.consumer)


@dataclass(frozen=True)
class WhatIf:
    """What a candidate of a what-if answer says besides its allocations."""

    # Ignored consumers the candidate displaces (sorted UUIDs).
    displaces: tuple[str, ...] | None = None
    # With preemption: the consumers to remove first (empty: none).
    evicts: tuple[Holding, ...] | None = None


def without(snap: LiveSnapshot, holdings: Iterable[Holding]) -> LiveSnapshot:
    """``snap`` as it would be without the ``holdings``' allocations (usage
    never goes below zero)."""
    changed: dict[str, dict[str, int]] = {}
    for h in holdings:
        for uuid, rc, amount in h.pairs():
            per_rc = changed.get(uuid) or snap.used.get(uuid)
            if per_rc is None or not amount or rc not in per_rc:
                continue
            if uuid not in changed:
                per_rc = changed[uuid] = dict(per_rc)
            left = per_rc[rc] - amount
            if left > 0:
                per_rc[rc] = left
            else:
                del per_rc[rc]
    return snap.with_usage(changed)


def shortfall(snap: Snapshot, cand: Candidate) -> dict[Pair, int]:
    """How much of each (provider, class) the candidate takes is missing in
    ``snap`` (only pairs where something is)."""
    missing: dict[Pair, int] = {}
    used, index, inventory = snap.used, snap.index, snap.inventory
    for provider, resources in cand.allocations.items():
        limits = inventory[index[provider]]
        usage = used.get(provider, {})
        for rc, amount in resources.items():
            over = usage.get(rc, 0) + amount - limits[rc][CAPACITY]
            if over > 0:
                missing[(provider, rc)] = over
    return missing


def displaced(snap: Snapshot, cand: Candidate, ignored: Sequence[Holding]) -> tuple[str, ...]:
    """The ignored consumers ``cand`` displaces, ``snap`` being the world
    with their allocations."""
    missing = shortfall(snap, cand)
    if not missing:
        return ()
    return tuple(sorted({h.consumer for h in ignored
                         if any(h.allocations.get(p, {}).get(rc) for p, rc in missing)}))


def excess(snap: Snapshot, victims: Iterable[Holding], missing: Mapping[Pair, int]) -> Fraction:
    """Capacity the victims free beyond what is missing, each class of each
    provider as a fraction of the provider's capacity of it."""
    freed: dict[Pair, int] = {}
    for h in victims:
        for p, rc, amount in h.pairs():
            freed[(p, rc)] = freed.get((p, rc), 0) + amount
    # Summed over a common denominator, reduced once at the end: a Fraction
    # per term would reduce at every step.
    num, den = 0, 1
    index, inventory = snap.index, snap.inventory
    for (p, rc), amount in freed.items():
        i = index.get(p)
        limits = None if i is None else inventory[i].get(rc)
        if limits is None:
            continue
        beyond = amount - missing.get((p, rc), 0)
        if beyond > 0:
            cap = max(limits[CAPACITY], 1)
            num, den = num * cap + beyond * den, den * cap
    return Fraction(num, den)


def eviction_set(snap: Snapshot, cand: Candidate,
                 on_provider: Mapping[str, Sequence[Holding]],
                 budget: int = EVICTION_BUDGET) -> tuple[Holding, ...] | None:
    """The eviction set of ``cand`` (see the module docstring): ``()`` when
    it fits as it is, None when no set makes it fit or finding the set
    would look at more than ``budget`` sets.  ``on_provider``: the
    preemptible consumers holding allocations on each provider."""
    missing = shortfall(snap, cand)
    if not missing:
        return ()
    # Only a consumer freeing some of what is missing can be in a smallest set.
    useful: dict[str, Holding] = {}
    for p, rc in missing:
        for h in on_provider.get(p, ()):
            if h.allocations[p].get(rc):
                useful[h.consumer] = h
    pool = [useful[c] for c in sorted(useful)]
    gives = [tuple(h.allocations.get(p, {}).get(rc, 0) for p, rc in missing) for h in pool]
    needs = tuple(missing.values())
    if any(sum(g[k] for g in gives) < need for k, need in enumerate(needs)):
        return None
    looked = 0
    for size in range(1, len(pool) + 1):
        best: tuple[Fraction, tuple[str, ...]] | None = None
        chosen: tuple[int, ...] = ()
        for combo in combinations(range(len(pool)), size):
            looked += 1
            if looked > budget:
                return None
            if all(sum(gives[j][k] for j in combo) >= need for k, need in enumerate(needs)):
                # Combinations come in sorted order: ties keep the first.
                key = (excess(snap, (pool[j] for j in combo), missing),
                       tuple(pool[j].consumer for j in combo))
                if best is None or key < best:
                    best, chosen = key, combo
        if best is not None:
            return tuple(pool[j] for j in chosen)
    return None


def by_provider(holdings: Iterable[Holding]) -> dict[str, list[Holding]]:
    """The holdings on each provider."""
    found: dict[str, list[Holding]] = {}
    for h in holdings:
        for p in h.allocations:
            found.setdefault(p, []).append(h)
    return found


# ---------------------------------------------------------------------------
# The preemptible consumers of one state of the world.
#
# ``preempt=true`` (docs/extensions/preempt.md) needs every preemptible
# consumer's allocations: the world without all of them is where the
# candidates that might fit once some go are searched, and the consumers on
# a candidate's providers are its possible victims.  The world keeps them
# from one request to the next and reads again only what moved
# (allotment.world.preemptible); the engine is handed them as a
# :class:`Preemptible`, or as plain holdings made into one for one request.


@dataclass(frozen=True)
class Preemptible:
    """The preemptible consumers of one state of the world."""

    holdings: tuple[Holding, ...]
    # Consumer UUID -> what it holds.
    by_consumer: dict[str, Holding]
    # Provider UUID -> the consumers holding something on it.
    on_provider: dict[str, list[Holding]]
    # The world without any of them (made when first asked for).
    snap: LiveSnapshot
    # The world's touch mark (LiveSnapshot.touch_mark) they were read at.
    mark: int
    _wide: list
    # Candidate (its allocations) -> its eviction set in this state of the
    # world: a new state makes a new Preemptible, so nothing here outlives
    # the usage, inventories and consumers it was worked out from.
    evictions: dict = field(default_factory=dict)

    def wide(self) -> LiveSnapshot:
        """The world without any preemptible consumer's allocations."""
        if not self._wide:
            self._wide.append(without(self.snap, self.holdings))
        return self._wide[0]


def preemptible_of(snap: LiveSnapshot, by_consumer: Mapping[str, Holding],
                   mark: int) -> Preemptible:
    """The preemptible consumers ``by_consumer`` of ``snap`` as it was at
    ``mark``."""
    held = tuple(by_consumer[c] for c in sorted(by_consumer))
    return Preemptible(held, dict(by_consumer), by_provider(held), snap, mark, [])


def preemptible_given(snap: LiveSnapshot, holdings: Sequence[Holding]) -> Preemptible:
    """Preemptible consumers handed in as they are (kept nowhere)."""
    return preemptible_of(snap, {h.consumer: h for h in holdings}, snap.touch_mark())


def preemptible_world(real: LiveSnapshot, ignored: Sequence[Holding],
                      preemptible: Preemptible | Sequence[Holding], snap: LiveSnapshot,
                      ) -> tuple[LiveSnapshot, Mapping[str, list[Holding]], dict | None]:
    """The world ``snap`` (``real`` without the ``ignored`` consumers)
    without any preemptible consumer, the preemptible consumers that may be
    evicted on each provider (every one but the ignored), and where the
    eviction sets of this state of the world are kept (None: nowhere, when
    consumers are ignored: that world is made for one request)."""
    kept = (preemptible if isinstance(preemptible, Preemptible)
            else preemptible_given(real, preemptible))
    if not ignored:
        return kept.wide(), kept.on_provider, kept.evictions
    skip = {h.consumer for h in ignored}
    victims = [h for h in kept.holdings if h.consumer not in skip]
    return without(snap, victims), by_provider(victims), None
