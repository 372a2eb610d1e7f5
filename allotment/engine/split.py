"""``can_split``: amounts of the unsuffixed group divided over several
providers of one tree (see docs/extensions/can-split.md).

The rule, per anchor tree:

* Every standard candidate stays a candidate: ``can_split`` only adds.
* The search is run once more with the split classes (and the unsuffixed
  group's required traits, checked at the end) taken out of the unsuffixed
  group.  For each assignment of the rest, each split class in name order
  is placed: if some providers could take the whole amount (counting what
  is already placed), it goes whole to each of them in turn, as in the
  standard search; otherwise it is divided greedily: eligible providers are
  taken by most free capacity first (then UUID order), each giving the
  largest multiple of its ``step_size`` that fits its free capacity, its
  ``max_unit`` (counting what is already placed there) and the remainder,
  if that is at least its ``min_unit``.  If the remainder does not reach
  zero, that branch gives nothing.  Placements where no class was divided
  are standard candidates and are not repeated.
* Eligible providers are the tree's providers that the unsuffixed group
  may use for that class (``in_tree``, ``member_of``, forbidden traits);
  sharing providers of other trees are not split over.  The unsuffixed
  group's required traits must be found on its providers, split ones
  included.

A class is divided in one way only, so the number of candidates cannot
explode with the number of ways to divide an amount; a divided class adds
no more candidates than placing it whole on one provider would, and a part
never exceeds what a single allocation may hold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from allotment.engine import plan as plan_mod
from allotment.engine import search, unsuffixed
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE, Snapshot

_NO_USAGE: dict[str, int] = {}


class SplitPlan:
    """What a request's ``can_split`` needs, resolved once per search."""

    def __init__(self, snapshot: Snapshot, full: plan_mod.Plan, reduced: plan_mod.Plan,
                 classes: list[tuple[str, int]]) -> None:
        self.snapshot = snapshot
        self.full = full
        self.reduced = reduced
        self.classes = classes
        self.unsuffixed = full.unsuffixed
        self.u_pos = full.groups.index(full.unsuffixed)
        # Where each group of the reduced plan sits in the full one.
        by_suffix = {g.suffix: i for i, g in enumerate(full.groups)}
        self.positions = [by_suffix[g.suffix] for g in reduced.groups]

    def eligible(self, r: int, rc: str) -> list[int]:
        g = self.unsuffixed
        snap = self.snapshot
        if (g.tree_root is not None and g.tree_root != r) or r in g.banned:
            return []
        out = []
        for p in snap.members_with(r, rc):
            if p in g.banned or not g.forbidden.isdisjoint(snap.traits[p]):
                continue
            if g.members is not None and r not in g.members and p not in g.members:
                continue
            out.append(p)
        return out

    def singles(self, r: int, usage: dict, rc: str, amount: int) -> list[int]:
        """Providers that could take the whole ``amount`` after ``usage``,
        as the standard search would find them."""
        snap = self.snapshot
        out = []
        for p in unsuffixed.unsuffixed_options(self.full, self.unsuffixed, r, rc, amount):
            already = usage.get((p, rc), 0)
            if already:
                lim = snap.inventory[p][rc]
                used = snap.used.get(snap.uuids[p], _NO_USAGE).get(rc, 0)
                if used + already + amount > lim[CAPACITY] or already + amount > lim[MAX_UNIT]:
                    continue
            out.append(p)
        return out

    def divide(self, r: int, usage: dict, rc: str, amount: int) -> list[tuple[int, int]] | None:
        """The greedy division of ``amount`` (see module doc), or None."""
        snap = self.snapshot
        inventory, used_of, uuids = snap.inventory, snap.used, snap.uuids
        rows = []
        for p in self.eligible(r, rc):
            lim = inventory[p][rc]
            already = usage.get((p, rc), 0)
            free = lim[CAPACITY] - used_of.get(uuids[p], _NO_USAGE).get(rc, 0) - already
            rows.append((free, uuids[p], p, lim, already))
        # Ties go by UUID, never by position: a process that learnt of the
        # providers in another order must divide the same way.
        rows.sort(key=lambda row: (-row[0], row[1]))
        parts = []
        remaining = amount
        for free, _uuid, p, lim, already in rows:
            most = min(remaining, free, lim[MAX_UNIT] - already)
            take = most - most % lim[STEP_SIZE] if most > 0 else 0
            if take <= 0 or take < lim[MIN_UNIT]:
                continue
            parts.append((p, take))
            remaining -= take
            if not remaining:
                return parts
        return None

    def _place(self, r: int, k: int, usage: dict, picks: list[int],
               divided: bool) -> Iterator[tuple[dict, list[int]]]:
        if k == len(self.classes):
            if divided:
                yield usage, picks
            return
        rc, amount = self.classes[k]
        singles = self.singles(r, usage, rc, amount)
        if singles:
            for p in singles:
                after = dict(usage)
                after[(p, rc)] = after.get((p, rc), 0) + amount
                yield from self._place(r, k + 1, after, [*picks, p], divided)
            return
        parts = self.divide(r, usage, rc, amount)
        if parts is None:
            return
        after = dict(usage)
        for p, take in parts:
            after[(p, rc)] = after.get((p, rc), 0) + take
        yield from self._place(r, k + 1, after, picks + [p for p, _ in parts], True)

    def results(self, r: int, rest: Iterator[tuple]) -> Iterator[tuple[dict, list]]:
        """Split candidates of anchor ``r`` from the assignments of the rest."""
        snap = self.snapshot
        required = self.unsuffixed.required
        for usage, chosen in rest:
            if usage is plan_mod.READY:
                usage, chosen = _unpack(snap, chosen)
            base: list[list[int]] = [[] for _ in self.full.groups]
            for pos, picks in zip(self.positions, chosen, strict=True):
                base[pos] = list(picks)
            for placed, picks in self._place(r, 0, usage, [], False):
                providers = base[self.u_pos] + picks
                if required:
                    have = set().union(*(snap.traits[p] for p in providers))
                    if any(any_of.isdisjoint(have) for any_of in required):
                        continue
                full = list(base)
                full[self.u_pos] = providers
                yield placed, full


def _unpack(snap: Snapshot, cand: search.Candidate) -> tuple[dict, list]:
    index = snap.index
    usage = {(index[u], rc): amount
             for u, res in cand.allocations.items() for rc, amount in res.items()}
    return usage, [[index[u] for u in cand.mappings[""]]]


def reduced_groups(request: AllocationCandidatesRequest,
                   can_split: frozenset[str]) -> tuple[SearchGroup, ...]:
    """The request's groups without the split classes and the unsuffixed
    group's required traits (checked after the split instead)."""
    out = []
    for g in request.groups:
        if g.suffix:
            out.append(g)
            continue
        rest = {rc: a for rc, a in g.resources.items() if rc not in can_split}
        if rest:
            out.append(dataclasses.replace(g, resources=rest, required_traits=()))
    return tuple(out)


def make_plan(snapshot: Snapshot, full: plan_mod.Plan, reduced: plan_mod.Plan,
              can_split: frozenset[str]) -> SplitPlan:
    u = full.request.group("")
    classes = sorted((rc, a) for rc, a in u.resources.items() if rc in can_split)
    return SplitPlan(snapshot, full, reduced, classes)
