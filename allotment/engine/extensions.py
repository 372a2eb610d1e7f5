"""Request features no Placement release has: ``root_member_of``,
``isolate``, anti-affinity in ``same_subtree`` (``!``), ``can_split``.

They are reached only through the extension opt-in (see
``docs/extensions.md``); the API turns such a query into an
:class:`ExtendedRequest`, a standard :class:`AllocationCandidatesRequest`
plus the extra constraints.  The search itself is the standard one: the
extra root filter narrows the anchors it visits and the extra group
constraints are checked on each assignment before candidates are
deduplicated, so ``limit`` still counts only accepted candidates and the
standard search code stays as it is.

Semantics (the documentation pages repeat them with worked examples):

* ``root_member_of``: every entry must hold for the root of the candidate's
  (non-sharing) tree: the root is in one of the entry's aggregates;
  ``forbidden_root_aggs`` lists aggregates the root must not be in.
* ``isolate``: each entry is a set of suffixed groups that must be satisfied
  by pairwise different providers.  Entries are independent.
* anti-affinity: each ``(positive, negative)`` pair comes from one
  ``same_subtree`` value ``_A,_B,!_C``.  The positive groups follow the
  standard ``same_subtree`` rule, so one of their providers (the *top*) is
  an ancestor-or-self of all of them; no provider of a negative group may
  be the top or one of its descendants.
* ``can_split``: see the section of that name below.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from allotment.engine import anchors, search, unsuffixed
from allotment.engine import plan as plan_mod
from allotment.engine.forest import lca
from allotment.engine.packed import Packed, Packer
from allotment.engine.plan import READY
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE, Snapshot
from allotment.engine.whatif import Holding, Preemptible


@dataclass(frozen=True)
class ExtendedRequest:
    """A standard request plus the extension constraints."""

    base: AllocationCandidatesRequest
    # Each inner set is "any of these"; the outer tuple is "all of these".
    root_member_of: tuple[frozenset[str], ...] = ()
    forbidden_root_aggs: frozenset[str] = frozenset()
    isolate: tuple[frozenset[str], ...] = ()
    # (positive suffixes, negative suffixes) per anti-affine same_subtree.
    anti_affinity: tuple[tuple[frozenset[str], frozenset[str]], ...] = field(default=())
    # Classes of the unsuffixed group that may be divided (see can_split below).
    can_split: frozenset[str] = frozenset()
    # Consumers whose allocations the answer is worked out without, and
    # with preemption the consumers that may be removed (None: no
    # preemption): as they are, or as the world keeps them; see
    # engine.whatif.  The search never sees them.
    ignored: tuple[Holding, ...] = ()
    preemptible: tuple[Holding, ...] | Preemptible | None = None

    def __post_init__(self) -> None:
        known = {g.suffix for g in self.base.groups if g.suffix}
        for entry in self.isolate:
            if not entry <= known:
                raise ValueError("isolate must name suffixed groups of the request")
        for positive, negative in self.anti_affinity:
            if not positive or not negative:
                raise ValueError("anti-affinity needs positive and negative groups")
            if not (positive | negative) <= known or positive & negative:
                raise ValueError("anti-affinity must name distinct suffixed groups")
        if self.isolate and self.base.group_policy is not None:
            raise ValueError("isolate and group_policy are mutually exclusive")
        object.__setattr__(self, "can_split", frozenset(self.can_split))
        plain = self.base.group("")
        if self.can_split and (plain is None
                               or not self.can_split <= set(plain.resources)):
            raise ValueError("can_split must name classes of the unsuffixed group")

    @property
    def has_group_constraints(self) -> bool:
        return bool(self.isolate or self.anti_affinity)

    @property
    def is_standard(self) -> bool:
        return not (self.root_member_of or self.forbidden_root_aggs
                    or self.has_group_constraints or self.can_split
                    or self.is_what_if)

    @property
    def is_what_if(self) -> bool:
        return bool(self.ignored) or self.preemptible is not None


def extend(request: AllocationCandidatesRequest | ExtendedRequest) -> ExtendedRequest:
    return request if isinstance(request, ExtendedRequest) else ExtendedRequest(request)


class _ExtPlan(plan_mod.Plan):
    """The standard plan, visiting only roots the extension allows."""

    ext: ExtendedRequest
    root_members: frozenset[int] | None
    root_banned: frozenset[int]
    isolate_pos: list[list[int]]
    anti_pos: list[tuple[list[int], list[int]]]

    def configure(self, ext: ExtendedRequest) -> None:
        snap = self.snapshot
        agg = snap.agg_members
        self.ext = ext
        self.split: SplitPlan | None = None
        self.root_members = None
        if ext.root_member_of:
            sets = [set().union(*(agg.get(a, ()) for a in any_of))
                    for any_of in ext.root_member_of]
            self.root_members = frozenset(set.intersection(*sets))
        self.root_banned = frozenset(
            i for a in ext.forbidden_root_aggs for i in agg.get(a, ()))
        pos = {g.suffix: i for i, g in enumerate(self.groups)}
        self.isolate_pos = [sorted(pos[s] for s in entry) for entry in ext.isolate]
        self.anti_pos = [(sorted(pos[s] for s in p), sorted(pos[s] for s in n))
                         for p, n in ext.anti_affinity]

    def anchor_set(self) -> frozenset[int]:
        cached = self.__dict__.get("_anchor_set")
        if cached is None:
            cached = self._anchor_set = frozenset(self.anchors(None))
        return cached

    def root_aggs_ok(self, r: int) -> bool:
        if self.root_members is not None and r not in self.root_members:
            return False
        return r not in self.root_banned

    def anchors(self, rng: random.Random | None) -> list[int]:
        return [r for r in super().anchors(rng) if self.root_aggs_ok(r)]

    def root_ok(self, r: int) -> bool:
        return super().root_ok(r) and self.root_aggs_ok(r)

    def accepts(self, chosen: list[list[int]]) -> bool:
        """Whether one assignment (providers per group) meets the extension."""
        for entry in self.isolate_pos:
            picked = [chosen[k][0] for k in entry]
            if len(set(picked)) != len(picked):
                return False
        snap = self.snapshot
        for positive, negative in self.anti_pos:
            top = lca(snap, {p for k in positive for p in chosen[k]})
            if top is None:
                return False
            for k in negative:
                for q in chosen[k]:
                    if is_within(snap, q, top):
                        return False
        return True


def is_within(snap: Snapshot, q: int, top: int) -> bool:
    """Whether provider ``q`` is ``top`` or one of its descendants."""
    parent = snap.parent
    while q != -1:
        if q == top:
            return True
        q = parent[q]
    return False


def compile_plan(snapshot: Snapshot, ext: ExtendedRequest) -> _ExtPlan | None:
    plan = _ExtPlan.compile(snapshot, ext.base)
    if plan is None:
        return None
    plan.configure(ext)
    if ext.can_split:
        base = dataclasses.replace(
            ext.base, groups=reduced_groups(ext.base, ext.can_split))
        groups = [plan_mod.Group(snapshot, g) for g in base.groups]
        # Built directly: what remains may be resourceless groups, or nothing.
        reduced = _ExtPlan(snapshot, base, groups)
        reduced.configure(dataclasses.replace(ext, base=base, can_split=frozenset()))
        plan.split = make_split_plan(snapshot, plan, reduced, ext.can_split)
    return plan


def anchor_results(plan: _ExtPlan, r: int,
                   rng: random.Random | None = None) -> Iterator[tuple]:
    """The standard search of one anchor, restricted to accepted assignments,
    then (with ``can_split``) the split candidates."""
    for found in anchors.search_anchor(plan, r, rng):
        usage, chosen = found
        # Ready-made candidates come only from requests without suffixed
        # groups, which the group constraints cannot concern.
        if usage is READY or plan.accepts(chosen):
            yield found
    if plan.split is not None:
        yield from plan.split.results(r, anchor_results(plan.split.reduced, r, rng))


def find_extended_candidates(
    snapshot: Snapshot,
    request: AllocationCandidatesRequest | ExtendedRequest,
    *,
    limit: int | None = None,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
    packer: Packer | None = None,
) -> Iterator[search.Candidate | Packed]:
    """:func:`allotment.engine.search.find_candidates` for extended requests.

    Same arguments, order and determinism; a plain request gives exactly
    what the standard search gives.  Only a plain request's answers are
    kept, so only a plain request may yield packed trees.
    """
    ext = extend(request)
    if ext.is_standard:
        return search.find_candidates(
            snapshot, ext.base, limit=limit, max_candidates=max_candidates,
            strategy=strategy, randomize=randomize, rng=rng, packer=packer)
    if strategy not in search.STRATEGIES:
        raise ValueError(f"unknown generation strategy {strategy!r}")
    cap = ext.base.limit if limit is None else limit
    if max_candidates is not None and max_candidates >= 0:
        cap = max_candidates if cap is None else min(cap, max_candidates)
    if cap == 0:
        return iter(())
    if randomize and rng is None:
        rng = random.Random()
    if not randomize:
        rng = None
    plan = compile_plan(snapshot, ext)
    if plan is None:
        return iter(())
    results = search._dedupe(plan, search._interleave(plan, strategy, rng, anchor_results))
    if rng is not None and cap is None:
        everything = list(results)
        rng.shuffle(everything)
        return iter(everything)
    return itertools.islice(results, cap)


def tree_yields(plan: _ExtPlan | None, r: int) -> bool:
    """Whether root ``r`` anchors at least one candidate (``limit`` aside)."""
    if plan is None or not plan.root_ok(r) or r not in plan.anchor_set():
        return False
    return next(anchor_results(plan, r), None) is not None


# ---------------------------------------------------------------------------
# ``can_split``: amounts of the unsuffixed group divided over several
# providers of one tree (see docs/extensions/can-split.md).
#
# The rule, per anchor tree:
#
# * Every standard candidate stays a candidate: ``can_split`` only adds.
# * The search is run once more with the split classes (and the unsuffixed
#   group's required traits, checked at the end) taken out of the unsuffixed
#   group.  For each assignment of the rest, each split class in name order
#   is placed: if some providers could take the whole amount (counting what
#   is already placed), it goes whole to each of them in turn, as in the
#   standard search; otherwise it is divided greedily: eligible providers are
#   taken by most free capacity first (then UUID order), each giving the
#   largest multiple of its ``step_size`` that fits its free capacity, its
#   ``max_unit`` (counting what is already placed there) and the remainder,
#   if that is at least its ``min_unit``.  If the remainder does not reach
#   zero, that branch gives nothing.  Placements where no class was divided
#   are standard candidates and are not repeated.
# * Eligible providers are the tree's providers that the unsuffixed group
#   may use for that class (``in_tree``, ``member_of``, forbidden traits);
#   sharing providers of other trees are not split over.  The unsuffixed
#   group's required traits must be found on its providers, split ones
#   included.
#
# A class is divided in one way only, so the number of candidates cannot
# explode with the number of ways to divide an amount; a divided class adds
# no more candidates than placing it whole on one provider would, and a part
# never exceeds what a single allocation may hold.


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


def make_split_plan(snapshot: Snapshot, full: plan_mod.Plan, reduced: plan_mod.Plan,
              can_split: frozenset[str]) -> SplitPlan:
    u = full.request.group("")
    classes = sorted((rc, a) for rc, a in u.resources.items() if rc in can_split)
    return SplitPlan(snapshot, full, reduced, classes)
