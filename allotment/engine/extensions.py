"""Request features no Placement release has: ``root_member_of``,
``isolate``, anti-affinity in ``same_subtree`` (``!``).

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
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from allotment.engine import anchors, search, split
from allotment.engine import plan as plan_mod
from allotment.engine.forest import lca
from allotment.engine.packed import Packed, Packer
from allotment.engine.plan import READY
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.snapshot import Snapshot
from allotment.engine.whatif import Holding, Reader


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
    # Classes of the unsuffixed group that may be divided (engine.split).
    can_split: frozenset[str] = frozenset()
    # Consumers whose allocations the answer is worked out without, and
    # with preemption the consumers that may be removed (None: no
    # preemption): as they are, or read (and kept in the world) by a
    # Reader; see engine.whatif.  The search never sees them.
    ignored: tuple[Holding, ...] = ()
    preemptible: tuple[Holding, ...] | Reader | None = None

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
        unsuffixed = self.base.group("")
        if self.can_split and (unsuffixed is None
                               or not self.can_split <= set(unsuffixed.resources)):
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
        self.split: split.SplitPlan | None = None
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
            ext.base, groups=split.reduced_groups(ext.base, ext.can_split))
        groups = [plan_mod.Group(snapshot, g) for g in base.groups]
        # Built directly: what remains may be resourceless groups, or nothing.
        reduced = _ExtPlan(snapshot, base, groups)
        reduced.configure(dataclasses.replace(ext, base=base, can_split=frozenset()))
        plan.split = split.make_plan(snapshot, plan, reduced, ext.can_split)
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
