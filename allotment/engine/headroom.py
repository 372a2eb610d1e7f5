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


def place(snap: Snapshot, candidates: list[Totals]) -> int:
    """How many placements repeated placement makes from ``candidates``
    (every candidate of the trees placed together, at the current usage).

    Usage only grows, and everything but capacity that decides whether a
    candidate is valid does not depend on usage: the candidates of a later
    step are exactly those of the first that still fit.  So the first are
    sorted once into allocation order and each step takes the first that
    fits.  One that no longer fits never will again, and the first that
    fits stays first for as long as it fits: it is taken as many times as
    it fits at once, then the next.
    """
    ordered = sorted(candidates, key=lambda t: sorted(t.items()))
    free: dict[tuple[str, str], int] = {}
    for totals in ordered:
        for key in totals:
            if key not in free:
                free[key] = _free(snap, snap.used, *key)
    placed = 0
    for totals in ordered:
        times = min((free[key] // amount for key, amount in totals.items() if amount > 0),
                    default=0)
        times = min(times, MAX_STEPS - placed)
        if times <= 0:
            continue
        for key, amount in totals.items():
            free[key] -= amount * times
        placed += times
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


def _tree_answers(snap: Snapshot, plan, memo: dict | None,
                  ) -> dict[int, tuple[list[Totals], int, frozenset[str], bool]]:
    """Per anchor with candidates: its candidates (as totals), how many fit
    on it alone, the aggregates of its tree and whether it holds or uses a
    sharing provider.  With ``memo`` (kept by the caller between requests
    of the same kind, by root UUID), a tree whose providers and serving
    sharing providers did not change since is not searched again."""
    served = snap.sharing_by_anchor
    revisions = snap.position_revisions() if memo is not None else None
    many = snap.trees_of_many().get
    out = {}
    for r in plan.anchor_set():
        if not plan.root_ok(r):
            continue
        members = many(r)
        stamp = None
        if revisions is not None:
            pools = served.get(r)
            if members is None and pools is None:
                stamp = revisions[r]  # a tree of one provider, no pool: most hosts
            else:
                at = revisions.__getitem__
                stamp = (tuple(map(at, members or (r,))), tuple(map(at, pools or ())))
            held = memo.get(snap.uuids[r])
            if held is not None and held[0] == stamp:
                if held[1] is not None:
                    out[r] = held[1]
                continue
        members = members or (r,)
        found = _candidates(plan, r)
        answer = None
        if found:
            shares = r in served or any(snap.is_sharing[m] for m in members)
            aggs = frozenset().union(*(snap.aggregates[m] for m in members))
            answer = out[r] = (found, place(snap, found), aggs, shares)
        if stamp is not None:
            memo[snap.uuids[r]] = (stamp, answer)
    return out


def count(snap: Snapshot, request: AllocationCandidatesRequest | extensions.ExtendedRequest,
          *, by_aggregate: bool = True, memo: dict | None = None,
          with_largest: bool = True) -> Headroom:
    """How many more instances of ``request`` fit, per tree, per aggregate
    and in total (see the module docstring).  ``memo``: see
    :func:`_tree_answers`; ``with_largest`` false leaves ``largest`` empty
    (it does not depend on the request)."""
    ext = extensions.extend(request)
    # Every candidate counts, whatever the request's own limit.
    ext = dataclasses.replace(ext, base=dataclasses.replace(ext.base, limit=None))
    result = Headroom(largest=largest(snap) if with_largest else {})
    plan = extensions.compile_plan(snap, ext)
    if plan is None:
        return result
    answers = _tree_answers(snap, plan, memo)
    for r, (_found, n, _aggs, _shares) in answers.items():
        if n:
            result.per_host[snap.uuids[r]] = n
    alone = {r for r, answer in answers.items() if not answer[3]}
    linked = [r for r, answer in answers.items() if answer[3] and answer[1]]

    def together(trees: list[int]) -> int:
        if len(trees) == 1:
            return answers[trees[0]][1]
        return place(snap, [t for r in trees for t in answers[r][0]])

    result.total = sum(answers[r][1] for r in alone)
    for component in _components(snap, linked):
        result.total += together(component)
    if by_aggregate:
        trees_of: dict[str, list[int]] = {}
        for r, (_found, n, aggs, _shares) in answers.items():
            if n:
                for agg in aggs:
                    trees_of.setdefault(agg, []).append(r)
        for agg, trees in trees_of.items():
            n = sum(answers[r][1] for r in trees if r in alone)
            shared = [r for r in trees if r not in alone]
            for component in _components(snap, shared):
                n += together(component)
            if n:
                result.per_aggregate[agg] = n
    return result
