"""Headroom: how many more instances of a request fit, by placing them.

The count is what repeated placement gives: find the request's candidates
against the current usage, take one, add its allocations to the usage, and
again, until nothing fits.  Nested trees, granular groups, traits,
``same_subtree`` and sharing providers therefore count exactly as the search
places them.  The candidate taken each time is the *first in placement
order*: the one whose list of ``(provider's place, class, amount)`` sorts
first, where a provider of the candidate's own tree is placed by its place
in the tree's canonical order (engine.headroom_trees: the order follows
what the providers are, not their UUIDs) and a sharing provider after the
tree's own, by UUID; candidates of different trees placed together that
tie are taken in their trees' root UUID order.  The rule depends only on
the set of candidates (so it can be checked against a brute-force
enumeration), and trees alike under other UUIDs count alike.

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

Between two states of a changing snapshot, a kept count is moved by
counting again only the trees that changed, and trees alike are counted
once (see engine.headroom_trees).

``largest`` is, per resource class, the largest amount of it alone that
still fits in one provider anywhere (min/max unit and step size included):
what fragmentation leaves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from allotment.engine import extensions
from allotment.engine.headroom_trees import Answer, Trees
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


# A candidate as placement takes it: (its place in placement order, its
# allocations as (provider UUID, class) -> amount).
Placed = tuple[tuple, Totals]


def _free(snap: Snapshot, used: Mapping[str, Mapping[str, int]], uuid: str,
          rc: str) -> int:
    lim = snap.inventory[snap.index[uuid]].get(rc)
    if lim is None:
        return 0
    return lim[CAPACITY] - used.get(uuid, {}).get(rc, 0)


def place(snap: Snapshot, candidates: list[Placed]) -> int:
    """How many placements repeated placement makes from ``candidates``
    (every candidate of the trees placed together, at the current usage).

    Usage only grows, and everything but capacity that decides whether a
    candidate is valid does not depend on usage: the candidates of a later
    step are exactly those of the first that still fit.  So the first are
    sorted once into placement order and each step takes the first that
    fits.  One that no longer fits never will again, and the first that
    fits stays first for as long as it fits: it is taken as many times as
    it fits at once, then the next.
    """
    ordered = [totals for _, totals in sorted(candidates, key=_order)]
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


def _order(candidate: Placed) -> tuple:
    return candidate[0]


def placed(snap: Snapshot, places: Mapping[int, int], r: int,
           entries: Iterable[tuple[int, str, int]]) -> Placed:
    """A candidate of the tree rooted at ``r`` from its ``(provider
    position, class, amount)`` entries, with its place in placement order
    (see the module docstring); ``places``: provider -> place in its tree's
    canonical order (0 where missing)."""
    root, uuids = snap.root, snap.uuids
    totals: Totals = {}
    key = []
    for p, rc, amount in entries:
        u = uuids[p]
        totals[(u, rc)] = amount
        key.append((0, places.get(p, 0), rc, amount) if root[p] == r else (1, u, rc, amount))
    key.sort()
    return (tuple(key), uuids[r]), totals


def _candidates(plan, places: Mapping[int, int], r: int) -> list[Placed]:
    """Every candidate anchored at ``r``, ready for placement."""
    snap = plan.snapshot
    index = snap.index
    out = []
    for usage, chosen in extensions.anchor_results(plan, r):
        if usage is READY:
            entries: Iterable = ((index[uuid], rc, amount)
                                 for uuid, held in chosen.allocations.items()
                                 for rc, amount in held.items())
        else:
            entries = ((p, rc, amount) for (p, rc), amount in usage.items())
        out.append(placed(snap, places, r, entries))
    return out


def _renamed(snap: Snapshot, trees: Trees, found: list[Placed], like: int,
             r: int) -> list[Placed]:
    """The candidates ``found`` of the tree rooted at ``like`` as those of
    the tree rooted at ``r``, alike (same signature and sharing providers):
    each provider taken for the one in the same canonical place."""
    uuids = snap.uuids
    at = uuids[r]
    apart = trees.orders.get(r)
    if apart is None:  # a tree of one provider
        was = uuids[like]
        return [((key, at), {(at if u == was else u, rc): n for (u, rc), n in totals.items()})
                for (key, _), totals in found]
    names = dict(zip(map(uuids.__getitem__, trees.orders[like]), map(uuids.__getitem__, apart),
                     strict=True))
    return [((key, at), {(names.get(u, u), rc): n for (u, rc), n in totals.items()})
            for (key, _), totals in found]


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


def _uses_aggregates(plan) -> bool:
    """Whether the request looks at which aggregates providers are in
    (then a tree's signature counts with its providers' aggregates)."""
    if getattr(plan, "root_members", None) is not None or getattr(plan, "root_banned", None):
        return True
    return any(g.members is not None or g.banned for g in plan.groups)


class Counts:
    """One request's count at one state of the snapshot, moved to the next
    state by counting again only the trees that changed (see
    engine.headroom_trees)."""

    def __init__(self) -> None:
        self.trees: Trees | None = None
        self.anchors: frozenset[int] | None = None
        self.answers: dict[int, Answer] = {}
        self.per_host: dict[str, int] = {}
        self.alone_total = 0
        self.alone_by_agg: dict[str, int] = {}
        # Group of linked trees -> (placed together, per aggregate).
        self.linked: dict[tuple[int, ...], tuple[int, dict[str, int]]] = {}
        self.linked_total = 0
        self.linked_by_agg: dict[str, int] = {}
        # Signature (engine.headroom_trees) -> count, None: no candidates.
        self.by_signature: dict[object, int | None] = {}

    def update(self, plan, trees: Trees) -> None:
        """Bring the count to the state of ``trees``."""
        anchors = plan.anchor_set()
        old = self.trees
        changed: set[int] | None = None
        if old is not None and old.snap is trees.snap and self.anchors == anchors \
                and trees.revs is not None:
            if trees.after == old.version:
                changed = trees.changed
            else:
                new = trees.stamps
                changed = {r for r, s in new.items() if old.stamps.get(r) != s}
                changed.update(r for r in old.stamps if r not in new)
        if changed is None:
            self.__init__()
            old = None
        elif len(self.by_signature) > 2 * len(trees.roots) + 1024:
            self.by_signature.clear()
        self.trees, self.anchors = trees, anchors
        dirty: set[tuple[int, ...]] = set()
        regrouped = old is not None and old.component_of != trees.component_of
        if regrouped:
            dirty.update(self.linked)
        uses_aggs = _uses_aggregates(plan)
        pinned = any(g.tree_root is not None for g in plan.groups)
        # Trees served by the same sharing providers and alike, this state
        # only (the providers' usage is not in the key): key -> (the tree
        # counted, its count, its candidates).
        served: dict[object, tuple[int, int | None, list[Placed]]] = {}
        if old is None:
            if pinned:
                changed = set(trees.roots)
            else:
                self._count_all(plan, trees, anchors, uses_aggs, served, dirty)
                changed = set()
        assert changed is not None
        for r in changed:
            gone = self.answers.pop(r, None)
            if gone is not None:
                self._add(gone, -1)
                if gone.shares and old is not None:
                    dirty.add(old.component_of[r])
            if r not in anchors or not plan.root_ok(r):
                continue
            self._keep(trees, r, self._answer(plan, trees, r, None if pinned else uses_aggs,
                                              served), dirty)
        if regrouped:
            dirty.update(set(trees.component_of.values()))
        for group in dirty:
            self._place_group(trees, group)

    def _count_all(self, plan, trees: Trees, anchors: frozenset[int], uses_aggs: bool,
                   served: dict, dirty: set[tuple[int, ...]]) -> None:
        """Count every tree afresh: each kind of tree alike once."""
        snap = trees.snap
        uuids, aggregates, answers = snap.uuids, trees.aggregates, self.answers
        for r in trees.holding:
            if r in anchors and plan.root_ok(r):
                self._keep(trees, r, self._answer(plan, trees, r, uses_aggs, served), dirty)
        for key, roots in trees.classes(uses_aggs).items():
            members = [r for r in roots if r in anchors]
            # Root traits and aggregates are in the key: one tree answers
            # root_required and root member_of for all.
            if not members or not plan.root_ok(members[0]):
                continue
            if members[0] in trees.shares:
                for r in members:
                    self._keep(trees, r, self._served(plan, trees, r, key, served), dirty)
                continue
            n = self.by_signature.get(key, _MISSING)
            if n is _MISSING:
                found = _candidates(plan, trees.places, members[0])
                n = self.by_signature[key] = place(snap, found) if found else None
            if n is None:
                continue
            for r in members:
                answers[r] = Answer(uuids[r], n, aggregates[r], False, None)
            if not n:
                continue
            self.per_host.update((uuids[r], n) for r in members)
            self.alone_total += n * len(members)
            inside: dict[str, int] = {}
            for r in members:
                for agg in aggregates[r]:
                    inside[agg] = inside.get(agg, 0) + 1
            for agg, k in inside.items():
                _move(self.alone_by_agg, (agg,), n * k)

    def _keep(self, trees: Trees, r: int, answer: Answer | None,
              dirty: set[tuple[int, ...]]) -> None:
        """``answer`` as the tree's, in the sums (its group of linked trees
        to be placed again when it has sharing providers)."""
        if answer is None:
            return
        self.answers[r] = answer
        self._add(answer, 1)
        if answer.shares:
            dirty.add(trees.component_of[r])

    def _served(self, plan, trees: Trees, r: int, key: object, served: dict) -> Answer | None:
        """The answer of a tree served by sharing providers, counted once
        per ``key`` (its signature, aggregates and sharing providers) at
        this state: a tree alike takes the first one's candidates renamed."""
        snap = trees.snap
        like = served.get(key)
        if like is None:
            found = _candidates(plan, trees.places, r)
            n = place(snap, found) if found else None
            served[key] = (r, n, found)
        else:
            n = like[1]
            found = _renamed(snap, trees, like[2], like[0], r) if n is not None else []
        if n is None:
            return None
        return Answer(snap.uuids[r], n, trees.aggregates[r], True, found)

    def _answer(self, plan, trees: Trees, r: int, uses_aggs: bool | None,
                served: dict) -> Answer | None:
        snap = trees.snap
        if r in trees.shares:
            if uses_aggs is not None and r not in trees.holding:
                return self._served(plan, trees, r, trees.served_key(r), served)
            found = _candidates(plan, trees.places, r)
            if not found:
                return None
            return Answer(snap.uuids[r], place(snap, found), trees.aggregates[r], True, found)
        key: object = None
        if uses_aggs is not None:  # None: the request names trees (in_tree)
            shape, aggs = trees.signatures[r]
            key = (shape, aggs) if uses_aggs else shape
            n = self.by_signature.get(key, _MISSING)
        else:
            n = _MISSING
        if n is _MISSING:
            found = _candidates(plan, trees.places, r)
            n = place(snap, found) if found else None
            if key is not None:
                self.by_signature[key] = n
        if n is None:
            return None
        return Answer(snap.uuids[r], n, trees.aggregates[r], False, None)

    def _add(self, answer: Answer, sign: int) -> None:
        n = answer.count
        if n:
            if sign > 0:
                self.per_host[answer.uuid] = n
            else:
                del self.per_host[answer.uuid]
        if answer.shares or not n:
            return
        self.alone_total += sign * n
        _move(self.alone_by_agg, answer.aggregates, sign * n)

    def _place_group(self, trees: Trees, group: tuple[int, ...]) -> None:
        """Place the linked trees of ``group`` together again (a group of
        the trees' former grouping is only taken away)."""
        gone = self.linked.pop(group, None)
        if gone is not None:
            self.linked_total -= gone[0]
            for agg, n in gone[1].items():
                _move(self.linked_by_agg, (agg,), -n)
        if trees.component_of.get(group[0]) != group:
            return
        snap = trees.snap
        fitting = [a for a in map(self.answers.get, group) if a is not None and a.count]
        if not fitting:
            return
        total = (fitting[0].count if len(fitting) == 1
                 else place(snap, [t for a in fitting for t in a.found]))
        per_agg: dict[str, int] = {}
        for agg in frozenset().union(*(a.aggregates for a in fitting)):
            inside = [a for a in fitting if agg in a.aggregates]
            n = (total if len(inside) == len(fitting)
                 else place(snap, [t for a in inside for t in a.found]))
            if n:
                per_agg[agg] = n
                _move(self.linked_by_agg, (agg,), n)
        self.linked[group] = (total, per_agg)
        self.linked_total += total

    def result(self, by_aggregate: bool) -> Headroom:
        out = Headroom(per_host=dict(self.per_host),
                       total=self.alone_total + self.linked_total)
        if by_aggregate:
            alone, linked = self.alone_by_agg, self.linked_by_agg
            for agg in alone.keys() | linked.keys():
                n = alone.get(agg, 0) + linked.get(agg, 0)
                if n:
                    out.per_aggregate[agg] = n
        return out


_MISSING = object()
# Where a kept count of a request lives in the caller's memo.
STATE = ("counts",)


def _move(sums: dict[str, int], keys, n: int) -> None:
    for key in keys:
        left = sums.get(key, 0) + n
        if left:
            sums[key] = left
        else:
            sums.pop(key, None)


def count(snap: Snapshot, request: AllocationCandidatesRequest | extensions.ExtendedRequest,
          *, by_aggregate: bool = True, memo: dict | None = None,
          with_largest: bool = True, trees: Trees | None = None) -> Headroom:
    """How many more instances of ``request`` fit, per tree, per aggregate
    and in total (see the module docstring).  ``memo``: where the count is
    kept between calls for the same request (a changing snapshot's next
    state is counted from it, see :class:`Counts`); ``trees``: the trees
    at the snapshot's current state, when the caller keeps them for
    several requests; ``with_largest`` false leaves ``largest`` empty (it
    does not depend on the request)."""
    ext = extensions.extend(request)
    # Every candidate counts, whatever the request's own limit.
    ext = dataclasses.replace(ext, base=dataclasses.replace(ext.base, limit=None))
    if trees is None or not trees.unchanged(snap):
        trees = Trees(snap)
    plan = extensions.compile_plan(snap, ext)
    kept = memo is not None and trees.revs is not None
    if plan is None:
        if kept:
            memo.pop(STATE, None)
        found = Headroom()
    else:
        counts = memo.get(STATE) if kept else None
        if counts is None:
            counts = Counts()
            if kept:
                memo[STATE] = counts
        if counts.trees is not trees:
            counts.update(plan, trees)
        found = counts.result(by_aggregate)
    if with_largest:
        found.largest = trees.largest(largest)
    return found
