"""Headroom: how many more instances of a request fit, by placing them.

The count is what repeated placement gives: find the request's candidates
against the current usage, take one, add its allocations to the usage, and
again, until nothing fits.  Nested trees, granular groups, traits,
``same_subtree`` and sharing providers therefore count exactly as the search
places them.  The candidate taken each time is the *first in allocation
order*: the one whose ``(provider UUID, class, amount)`` list sorts first,
a rule that depends only on the set of candidates (so it can be checked
against a brute-force enumeration).

* Per host (tree): the tree alone, with the sharing providers that serve it
  at their current usage.
* In total: every tree together.  Trees that no sharing provider serves are
  independent and add up; trees linked through sharing providers are placed
  together, so a pool is not counted once per host.
* Per aggregate: the trees with a provider in the aggregate, together.

Usage only grows, and nothing but capacity that decides whether a candidate
is valid depends on usage: the candidates of each step are those of the
first step that still fit.  So candidates are searched for once, and the
placement steps only check capacity; a tree with a single candidate (a
flat host, with or without one pool) is counted by arithmetic, the free
capacity of each class over the amount asked.

``largest`` is, per resource class, the largest amount of it alone that
still fits in one provider anywhere (min/max unit and step size included):
what fragmentation leaves.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from allotment.engine import extensions
from allotment.engine.plan import READY
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE, Snapshot

# At most this many placements are made per tree or group of trees: a
# request of tiny amounts on a huge inventory is counted up to here.
MAX_STEPS = 100_000

Totals = dict[tuple[str, str], int]


@dataclass
class Headroom:
    # Root UUID -> instances that fit on that tree (trees where none fits
    # are left out).
    per_host: dict[str, int] = field(default_factory=dict)
    total: int = 0
    # Aggregate UUID -> instances that fit on its trees together.
    per_aggregate: dict[str, int] = field(default_factory=dict)
    # Resource class -> largest amount that still fits in one provider.
    largest: dict[str, int] = field(default_factory=dict)


def _totals(candidate) -> Totals:
    return {(uuid, rc): amount for uuid, held in candidate.allocations.items()
            for rc, amount in held.items()}


def _first(candidates: Iterable) -> Totals | None:
    """The totals of the candidate that comes first in allocation order."""
    best = best_key = None
    for c in candidates:
        totals = _totals(c)
        key = sorted(totals.items())
        if best_key is None or key < best_key:
            best, best_key = totals, key
    return best


def _free(snap: Snapshot, used: Mapping[str, Mapping[str, int]], uuid: str,
          rc: str) -> int:
    lim = snap.inventory[snap.index[uuid]].get(rc)
    if lim is None:
        return 0
    return lim[CAPACITY] - used.get(uuid, {}).get(rc, 0)


def _arithmetic(snap: Snapshot, totals: Totals) -> int:
    """Instances of one fixed allocation a single provider still takes:
    capacity is all that changes from one placement to the next."""
    return min((_free(snap, snap.used, uuid, rc) // amount
                for (uuid, rc), amount in totals.items() if amount > 0), default=0)


def _fits(snap: Snapshot, used: Mapping[str, Mapping[str, int]], totals: Totals) -> bool:
    return all(_free(snap, used, uuid, rc) >= amount for (uuid, rc), amount in totals.items())


def place(snap: Snapshot, candidates: list[Totals]) -> int:
    """How many placements repeated placement makes from ``candidates``
    (every candidate of the trees placed together, at the current usage).

    Usage only grows, and everything but capacity that decides whether a
    candidate is valid does not depend on usage: the candidates of a later
    step are exactly those of the first that still fit.  So the first are
    sorted once into allocation order, and each step takes the first that
    fits; one that no longer fits never will again.
    """
    if len(candidates) == 1:
        return _arithmetic(snap, candidates[0])
    ordered = sorted(candidates, key=lambda t: sorted(t.items()))
    changed: dict[str, dict[str, int]] = {}
    used = ChainMap(changed, snap.used)
    placed = start = 0
    while placed < MAX_STEPS and start < len(ordered):
        totals = ordered[start]
        if not _fits(snap, used, totals):
            start += 1
            continue
        for (uuid, rc), amount in totals.items():
            held = changed.get(uuid)
            if held is None:
                held = changed[uuid] = dict(snap.used.get(uuid, {}))
            held[rc] = held.get(rc, 0) + amount
        placed += 1
    return placed


def _candidates(plan, r: int) -> list[Totals]:
    """Every candidate anchored at ``r``, as totals."""
    out = []
    for usage, chosen in extensions.anchor_results(plan, r):
        if usage is READY:
            out.append(_totals(chosen))
        else:
            uuids = plan.snapshot.uuids
            out.append({(uuids[p], rc): amount for (p, rc), amount in usage.items()})
    return out


def largest(snap: Snapshot) -> dict[str, int]:
    """Per class, the largest amount of it that one provider could still take."""
    out: dict[str, int] = {}
    for i in snap.index.values():
        used = snap.used.get(snap.uuids[i], {})
        for rc, lim in (snap.inventory[i] or {}).items():
            room = min(lim[MAX_UNIT], lim[CAPACITY] - used.get(rc, 0))
            room -= room % lim[STEP_SIZE]
            if room >= lim[MIN_UNIT] and room > out.get(rc, 0):
                out[rc] = room
    return out


def _components(snap: Snapshot, roots: Iterable[int]) -> list[list[int]]:
    """Trees linked through the sharing providers that serve them."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in roots:
        find(r)
        # Sharing providers (as negative nodes) join the trees they serve
        # and the tree they are in.
        linked = [*snap.sharing_by_anchor.get(r, ()),
                  *(m for m in snap.tree_members(r) if snap.is_sharing[m])]
        for s in linked:
            parent[find(r)] = find(-1 - s)
    groups: dict[int, list[int]] = {}
    for r in roots:
        groups.setdefault(find(r), []).append(r)
    return [sorted(g, key=snap.uuids.__getitem__) for g in groups.values()]


def _aggregates_of_tree(snap: Snapshot, r: int) -> frozenset[str]:
    members = snap.tree_members(r)
    return frozenset().union(*(snap.aggregates[m] for m in members))


def count(snap: Snapshot, request: AllocationCandidatesRequest | extensions.ExtendedRequest,
          *, by_aggregate: bool = True) -> Headroom:
    """How many more instances of ``request`` fit, per tree, per aggregate
    and in total (see the module docstring)."""
    ext = extensions.extend(request)
    # Every candidate counts, whatever the request's own limit.
    ext = dataclasses.replace(ext, base=dataclasses.replace(ext.base, limit=None))
    result = Headroom(largest=largest(snap))
    plan = extensions.compile_plan(snap, ext)
    if plan is None:
        return result
    served = snap.sharing_by_anchor

    def shares(r: int) -> bool:
        return r in served or any(snap.is_sharing[m] for m in snap.tree_members(r))

    # Trees that neither hold nor use a sharing provider: from one search of
    # the whole world (which keeps its answers between requests on a live
    # snapshot).
    first_of: dict[int, list] = {}
    for c in extensions.find_candidates(snap, ext):
        r = snap.index[c.anchor]
        if not shares(r):
            first_of.setdefault(r, []).append(c)
    # The others each on its own: the whole-world search hands out a
    # candidate made only of sharing providers once, under the first tree
    # that reaches it.
    cands_of: dict[int, list[Totals]] = {r: [_totals(c) for c in found]
                                          for r, found in first_of.items()}
    for r in sorted(plan.anchor_set(), key=snap.uuids.__getitem__):
        if shares(r) and plan.root_ok(r):
            found = _candidates(plan, r)
            if found:
                cands_of[r] = found
    for r, found in cands_of.items():
        n = place(snap, found)
        if n:
            result.per_host[snap.uuids[r]] = n
    alone = set(first_of)
    linked = [r for r in cands_of if r not in alone and snap.uuids[r] in result.per_host]

    def together(trees: list[int]) -> int:
        if len(trees) == 1:
            return result.per_host.get(snap.uuids[trees[0]], 0)
        return place(snap, [t for r in trees for t in cands_of[r]])

    result.total = sum(result.per_host.get(snap.uuids[r], 0) for r in alone)
    for component in _components(snap, linked):
        result.total += together(component)
    if by_aggregate:
        trees_of: dict[str, list[int]] = {}
        for r in [*first_of, *linked]:
            for agg in _aggregates_of_tree(snap, r):
                trees_of.setdefault(agg, []).append(r)
        for agg, trees in trees_of.items():
            n = sum(result.per_host.get(snap.uuids[r], 0) for r in trees if r in alone)
            shared = [r for r in trees if r not in alone]
            for component in _components(snap, shared):
                n += together(component)
            if n:
                result.per_aggregate[agg] = n
    return result
