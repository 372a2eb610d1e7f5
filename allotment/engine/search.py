"""Lazy search for allocation candidates over a :class:`Snapshot`.

Semantics follow Placement's ``GET /allocation_candidates``:

* Every candidate is built around one *anchor*: the root of a non-sharing
  tree.  The unsuffixed group may take each of its resource classes from any
  provider of that tree or from a sharing provider that shares an aggregate
  with some provider of the tree; a suffixed group is satisfied by exactly one
  such provider.
* Amounts that several groups put on the same provider and resource class are
  summed and re-checked against capacity and ``max_unit``.
* Identical candidates reachable from several anchors (possible only when all
  their providers are sharing providers) are returned once.

Where upstream materialises the cartesian product of every group's matches
before truncating to ``limit``, this module walks the product depth-first,
checks constraints on partial assignments, and yields as it goes, so asking for
ten candidates costs about ten candidates' worth of work.  When a branch turns
out to be a dead end, interchangeable twins of the provider that led there
(see :meth:`Snapshot.symmetry_key`) are skipped instead of being re-explored.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from allotment.engine.request import AllocationCandidatesRequest, RequestGroup
from allotment.engine.snapshot import (
    CAPACITY,
    MAX_UNIT,
    MIN_UNIT,
    STEP_SIZE,
    Snapshot,
)

_NO_USAGE: Mapping[str, int] = {}
_UNSET = object()
# Marks a search result that is already a Candidate (see _search_anchor).
_READY = object()

STRATEGIES = ("depth-first", "breadth-first")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to satisfy the whole request.

    ``allocations`` maps provider UUID to ``{resource class: amount}``;
    ``mappings`` maps each group suffix (``""`` for the unsuffixed group) to
    the UUIDs of the providers that satisfied it.  Providers that satisfy only
    resourceless groups appear in ``mappings`` but not in ``allocations``.
    ``anchor`` is the root UUID of the tree the candidate was built around.
    Treat everything as read-only: candidates may share these mappings.
    """

    allocations: Mapping[str, Mapping[str, int]]
    mappings: Mapping[str, list[str]]
    anchor: str


def find_candidates(
    snapshot: Snapshot,
    request: AllocationCandidatesRequest,
    *,
    limit: int | None = None,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
) -> Iterator[Candidate]:
    """Yield the candidates satisfying ``request``, lazily.

    ``limit`` defaults to ``request.limit``; ``max_candidates`` mirrors
    ``[placement] max_allocation_candidates`` (negative: unlimited).
    ``strategy`` decides whether one anchor's candidates are exhausted before
    the next anchor is tried (``depth-first``) or anchors take turns
    (``breadth-first``).  Without ``randomize`` the order is a deterministic
    function of the snapshot and request.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown generation strategy {strategy!r}")
    if limit is None:
        limit = request.limit
    cap = limit
    if max_candidates is not None and max_candidates >= 0:
        cap = max_candidates if cap is None else min(cap, max_candidates)
    if cap == 0:
        return iter(())
    if randomize and rng is None:
        rng = random.Random()
    if not randomize:
        rng = None
    plan = _Plan.compile(snapshot, request)
    if plan is None:
        return iter(())
    results = _dedupe(plan, _interleave(plan, strategy, rng))
    if rng is not None and cap is None:
        # Everything is wanted anyway, so a true shuffle costs nothing extra.
        everything = list(results)
        rng.shuffle(everything)
        return iter(everything)
    return itertools.islice(results, cap)


def provider_summary_uuids(
    snapshot: Snapshot, candidates: Iterable[Candidate], *, nested_aware: bool
) -> list[str]:
    """UUIDs of the providers to describe in ``provider_summaries``.

    From 1.29 (``nested_aware``) Placement describes every provider of every
    tree that contributes resources to a candidate, so clients see the whole
    tree; before that, only the providers that contribute resources.
    """
    used = set()
    for cand in candidates:
        used.update(snapshot.index[u] for u in cand.allocations)
    if nested_aware:
        roots = {snapshot.root[i] for i in used}
        wanted = {i for r in roots for i in snapshot.tree_members(r)}
    else:
        wanted = used
    uuids = snapshot.uuids
    return sorted(uuids[i] for i in wanted)


def _fits(limits: tuple, used: int, amount: int) -> bool:
    """Whether a single request of ``amount`` may be placed on an inventory."""
    return (limits[MIN_UNIT] <= amount <= limits[MAX_UNIT]
            and amount % limits[STEP_SIZE] == 0
            and used + amount <= limits[CAPACITY])


# ---------------------------------------------------------------------------
# Request compilation


class _Group:
    """A request group resolved against one snapshot."""

    __slots__ = (
        "_ok",
        "banned",
        "forbidden",
        "members",
        "required",
        "resourceless",
        "resources",
        "suffix",
        "tree_root",
    )

    def __init__(self, snapshot: Snapshot, group: RequestGroup) -> None:
        self.suffix = group.suffix
        self.resources = tuple(sorted(group.resources.items()))
        self.required = group.required_traits
        self.forbidden = group.forbidden_traits
        self.resourceless = not self.resources
        agg = snapshot.agg_members
        self.members: frozenset[int] | None = None
        if group.member_of:
            sets = [
                set().union(*(agg.get(a, ()) for a in any_of))
                for any_of in group.member_of
            ]
            self.members = frozenset(set.intersection(*sets))
        self.banned = frozenset(
            i for a in group.forbidden_aggs for i in agg.get(a, ()))
        self.tree_root: int | None = None
        if group.in_tree is not None:
            i = snapshot.index.get(group.in_tree)
            # An unknown in_tree provider empties the result (checked by the
            # caller); -2 never equals a root index.
            self.tree_root = -2 if i is None else snapshot.root[i]
        self._ok: dict[int, bool] = {}

    def signature(self) -> tuple:
        """Everything that decides which providers can serve this group."""
        return (self.resources, self.required, self.forbidden, self.members,
                self.banned, self.tree_root)

    def never_matches(self) -> bool:
        if self.tree_root == -2:
            return True
        if self.members is not None and not self.members:
            return True
        # Upstream only ever finds providers for a resourceless group through
        # its required traits or aggregates; with neither it finds nothing.
        return self.resourceless and not self.required and self.members is None

    def single_ok(self, snapshot: Snapshot, p: int) -> bool:
        """Whether provider ``p`` alone satisfies this (suffixed) group."""
        if not snapshot.is_sharing[p]:
            # Other providers belong to one tree and are looked at once.
            return self._single_ok(snapshot, p)
        ok = self._ok.get(p)
        if ok is None:
            ok = self._ok[p] = self._single_ok(snapshot, p)
        return ok

    def _single_ok(self, snapshot: Snapshot, p: int) -> bool:
        # Upstream applies in_tree<$S> only when looking up inventory, so a
        # resourceless group ignores it.
        if (self.tree_root is not None and not self.resourceless
                and snapshot.root[p] != self.tree_root):
            return False
        if self.resources:
            inventories = snapshot.inventory[p]
            usage = snapshot.used.get(snapshot.uuids[p], _NO_USAGE)
            for rc, amount in self.resources:
                lim = inventories.get(rc)
                if lim is None or not _fits(lim, usage.get(rc, 0), amount):
                    return False
        traits = snapshot.traits[p]
        if not self.forbidden.isdisjoint(traits):
            return False
        for any_of in self.required:
            if any_of.isdisjoint(traits):
                return False
        if self.members is not None and p not in self.members:
            return False
        return p not in self.banned


class _Plan:
    """Everything about a request that does not depend on the anchor."""

    def __init__(self, snapshot: Snapshot, request: AllocationCandidatesRequest,
                 groups: list[_Group]) -> None:
        self.snapshot = snapshot
        self.request = request
        self.groups = groups
        self.unsuffixed = next((g for g in groups if not g.suffix), None)
        self.suffixed = [g for g in groups if g.suffix]
        self.isolate = request.isolate
        self.nested_aware = request.nested_aware
        by_suffix = {g.suffix: i for i, g in enumerate(groups)}
        self.subtrees = [
            frozenset(by_suffix[s] for s in st) for st in request.same_subtrees
        ]
        self.root_required = request.root_required
        self.root_forbidden = request.root_forbidden
        # The request is one unsuffixed group with resources: see _lonely_fits.
        self.only_unsuffixed = (self.unsuffixed is not None and not self.suffixed
                                and not self.unsuffixed.resourceless)
        # What such a candidate allocates, shared by every one of them.
        self.lonely_resources = (dict(self.unsuffixed.resources)
                                 if self.only_unsuffixed else {})

    @classmethod
    def compile(cls, snapshot: Snapshot,
                request: AllocationCandidatesRequest) -> _Plan | None:
        groups = [_Group(snapshot, g) for g in request.groups]
        if not groups or any(g.never_matches() for g in groups):
            return None
        if all(g.resourceless for g in groups):
            return None
        return cls(snapshot, request, groups)

    def anchors(self, rng: random.Random | None) -> list[int]:
        snap = self.snapshot
        allowed: set[int] | None = None
        for g in self.groups:
            if g.tree_root is None or g.resourceless:
                continue
            if not g.suffix:
                # The unsuffixed group may not use sharing providers when it
                # is pinned to a tree, so only that tree can anchor it.
                here = {g.tree_root}
            else:
                here = {g.tree_root}
                for s in snap.tree_members(g.tree_root):
                    if snap.is_sharing[s]:
                        here |= snap.anchors_of_sharing[s]
            allowed = here if allowed is None else allowed & here
        # Roots are kept in UUID order; so is any subset of them.
        anchors = (list(snap.roots) if allowed is None
                   else sorted(allowed, key=snap.uuids.__getitem__))
        if rng is not None:
            rng.shuffle(anchors)
        return anchors

    def root_ok(self, r: int) -> bool:
        if not (self.root_required or self.root_forbidden):
            return True
        traits = self.snapshot.traits[r]
        return self.root_required <= traits and self.root_forbidden.isdisjoint(traits)


# ---------------------------------------------------------------------------
# Enumeration


def _interleave(plan: _Plan, strategy: str,
                rng: random.Random | None) -> Iterator[tuple[int, dict, list]]:
    anchors = plan.anchors(rng)
    if strategy == "depth-first":
        for r in anchors:
            for found in _search_anchor(plan, r, rng):
                yield (r, *found)
        return
    # Breadth-first: one candidate per anchor per round, opening anchors
    # lazily so the first round over a big world stops as soon as the caller
    # has enough.
    active: list[Iterator] = []
    for r in anchors:
        gen = _search_anchor(plan, r, rng)
        first = next(gen, None)
        if first is not None:
            yield (r, *first)
            active.append((r, gen))
    while active:
        still = []
        for r, gen in active:
            found = next(gen, None)
            if found is not None:
                yield (r, *found)
                still.append((r, gen))
        active = still


def _dedupe(plan: _Plan, found: Iterator[tuple[int, dict, list]]) -> Iterator[Candidate]:
    snap = plan.snapshot
    uuids = snap.uuids
    root = snap.root
    is_sharing = snap.is_sharing
    groups = plan.groups
    seen: set = set()
    for r, usage, chosen in found:
        if usage is _READY:
            yield chosen  # already a Candidate, and reachable from r alone
            continue
        # A candidate can come from several anchors only if every provider it
        # uses could be reached as a sharing provider from elsewhere.
        portable = all(
            root[p] != r or is_sharing[p] for picks in chosen for p in picks)
        if portable:
            key = (frozenset(usage.items()),
                   tuple(frozenset(picks) for picks in chosen))
            if key in seen:
                continue
            seen.add(key)
        allocations: dict[str, dict[str, int]] = {}
        # In UUID order: positions need not follow UUIDs (see engine.live).
        for (p, rc), amount in sorted(usage.items(),
                                      key=lambda item: (uuids[item[0][0]], item[0][1])):
            allocations.setdefault(uuids[p], {})[rc] = amount
        mappings = {
            g.suffix: sorted(uuids[p] for p in set(picks))
            for g, picks in zip(groups, chosen, strict=True)
        }
        yield Candidate(allocations, mappings, uuids[r])


class _Slot:
    """One decision of the backtracking search: a provider for a group (or,
    for the unsuffixed group, for one of its resource classes)."""

    __slots__ = (
        "amounts",
        "closes_unsuffixed",
        "group",
        "group_pos",
        "option_set",
        "options",
        "subtrees",
        "suffixed",
    )

    def __init__(self, group_pos: int, group: _Group,
                 amounts: tuple[tuple[str, int], ...], options: list[int]) -> None:
        self.group_pos = group_pos
        self.group = group
        self.amounts = amounts
        self.options = options
        # Filled in when a same_subtree constraint needs it.
        self.option_set: frozenset[int] = frozenset()
        self.subtrees: tuple[int, ...] = ()
        self.closes_unsuffixed = False
        self.suffixed = bool(group.suffix)


def _unsuffixed_options(plan: _Plan, g: _Group, r: int,
                        rc: str, amount: int) -> list[int]:
    snap = plan.snapshot
    inventory, used, traits, uuids = snap.inventory, snap.used, snap.traits, snap.uuids
    if r in g.banned:
        return []
    anchor_member = g.members is not None and r in g.members
    out = []
    if g.tree_root is None or g.tree_root == r:
        for p in snap.members_with(r, rc):
            if not _fits(inventory[p][rc], used.get(uuids[p], _NO_USAGE).get(rc, 0), amount):
                continue
            if p in g.banned or not g.forbidden.isdisjoint(traits[p]):
                continue
            # An aggregate on the root spans the whole tree.
            if g.members is not None and not anchor_member and p not in g.members:
                continue
            out.append(p)
    if g.tree_root is None:
        for s in snap.sharing_by_anchor.get(r, ()):
            lim = inventory[s].get(rc)
            if lim is None or not _fits(lim, used.get(uuids[s], _NO_USAGE).get(rc, 0), amount):
                continue
            if s in g.banned or not g.forbidden.isdisjoint(traits[s]):
                continue
            if g.members is not None and s not in g.members:
                continue
            out.append(s)
    return out


def _suffixed_options(plan: _Plan, g: _Group, r: int) -> list[int]:
    snap = plan.snapshot
    if g.resourceless:
        base: Iterable[int] = snap.tree_members(r)
    else:
        base = snap.members_with(r, g.resources[0][0])
    out = [p for p in base if g.single_ok(snap, p)]
    out.extend(s for s in snap.sharing_by_anchor.get(r, ()) if g.single_ok(snap, s))
    return out


def _build_slots(plan: _Plan, r: int, rng: random.Random | None) -> list[_Slot] | None:
    slots: list[_Slot] = []
    u = plan.unsuffixed
    groups = plan.groups
    if u is not None:
        upos = groups.index(u)
        for rc, amount in u.resources:
            opts = _unsuffixed_options(plan, u, r, rc, amount)
            if not opts:
                return None
            slots.append(_Slot(upos, u, ((rc, amount),), opts))
        if u.required:
            traits = set()
            for slot in slots:
                for p in slot.options:
                    traits |= plan.snapshot.traits[p]
            if any(any_of.isdisjoint(traits) for any_of in u.required):
                return None
        # Only then is there something to check once its last class is placed.
        slots[-1].closes_unsuffixed = bool(u.required)
    suffixed = []
    # Groups asking for the same thing (two identical VGPU groups, say) share
    # one lookup.
    by_signature: dict[tuple, list[int]] = {}
    for pos, g in enumerate(groups):
        if not g.suffix:
            continue
        signature = g.signature()
        opts = by_signature.get(signature)
        if opts is None:
            opts = by_signature[signature] = _suffixed_options(plan, g, r)
        if not opts:
            return None
        suffixed.append(_Slot(pos, g, g.resources, list(opts)))
    # Most constrained first: dead ends show up as early as possible.
    suffixed.sort(key=lambda s: (len(s.options), s.group_pos))
    slots.extend(suffixed)
    if plan.isolate and len({p for s in suffixed for p in s.options}) < len(suffixed):
        return None
    # With the unsuffixed group alone every class has one slot, whose
    # options all fit: nothing for this check to find.
    if not plan.only_unsuffixed and not _enough_capacity(plan, slots):
        return None
    for slot in slots:
        slot.subtrees = tuple(
            i for i, st in enumerate(plan.subtrees) if slot.group_pos in st)
        if plan.subtrees:
            slot.option_set = frozenset(slot.options)
        if rng is not None:
            rng.shuffle(slot.options)
    return slots


def _enough_capacity(plan: _Plan, slots: list[_Slot]) -> bool:
    """Cheap necessary condition for classes requested by several groups."""
    wanted: dict[str, int] = {}
    sources: dict[str, set[int]] = {}
    for slot in slots:
        for rc, amount in slot.amounts:
            wanted[rc] = wanted.get(rc, 0) + amount
            sources.setdefault(rc, set()).update(slot.options)
    snap = plan.snapshot
    inventory, used, uuids = snap.inventory, snap.used, snap.uuids
    for rc, need in wanted.items():
        free = 0
        for p in sources[rc]:
            free += inventory[p][rc][CAPACITY] - used.get(uuids[p], _NO_USAGE).get(rc, 0)
            if free >= need:
                break
        if free < need:
            return False
    return True


def _lca(snap: Snapshot, nodes: Iterable[int]) -> int | None:
    parent, depth, root = snap.parent, snap.depth, snap.root
    it = iter(nodes)
    a = next(it)
    for b in it:
        if root[a] != root[b]:
            return None
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
    return a


def _search_anchor(plan: _Plan, r: int,
                   rng: random.Random | None) -> Iterator[tuple[dict, list]]:
    """Yield ``(usage, chosen)`` for every assignment anchored at root ``r``.

    ``usage`` maps (provider, rc) to the summed amount; ``chosen`` lists, per
    request group in request order, the providers picked for it.
    """
    if not plan.root_ok(r):
        return iter(())
    snap = plan.snapshot
    if plan.only_unsuffixed and snap.is_lonely(r):
        if not _lonely_fits(plan, r):
            return iter(())
        g = plan.unsuffixed
        if snap.is_sharing[r]:
            # Other anchors may reach the same candidate: let it be deduplicated.
            return iter((({(r, rc): amount for rc, amount in g.resources},
                          [[r] * len(g.resources)]),))
        uuid = snap.uuids[r]
        return iter(((_READY, Candidate({uuid: plan.lonely_resources}, {"": [uuid]}, uuid)),))
    slots = _build_slots(plan, r, rng)
    if slots is None:
        return iter(())
    if plan.only_unsuffixed and plan.nested_aware:
        return _unsuffixed_product(plan, r, slots)
    return _AnchorSearch(plan, slots).walk(0)


def _unsuffixed_product(plan: _Plan, r: int, slots: list[_Slot]) -> Iterator[tuple]:
    """Every assignment of the unsuffixed group alone, from 1.29.

    Its slots ask for different classes, so no choice limits another: the
    candidates are the product of the slots' options (those whose providers
    together have the required traits), in the order the general search
    would find them.
    """
    snap = plan.snapshot
    uuids, traits, is_sharing = snap.uuids, snap.traits, snap.is_sharing
    required = plan.unsuffixed.required
    wanted = [slot.amounts[0] for slot in slots]
    anchor = uuids[r]
    for combo in itertools.product(*(slot.options for slot in slots)):
        if required:
            have = set().union(*(traits[p] for p in set(combo)))
            if any(any_of.isdisjoint(have) for any_of in required):
                continue
        picked = list(zip(combo, wanted, strict=True))
        if any(is_sharing[p] for p in combo):
            # Other anchors may reach the same candidate: let it be deduplicated.
            yield ({(p, rc): amount for p, (rc, amount) in picked}, [list(combo)])
            continue
        allocations: dict[str, dict[str, int]] = {}
        for p, (rc, amount) in sorted(picked, key=lambda pick: (uuids[pick[0]], pick[1][0])):
            allocations.setdefault(uuids[p], {})[rc] = amount
        yield (_READY, Candidate(allocations, {"": sorted({uuids[p] for p in combo})}, anchor))


def _lonely_fits(plan: _Plan, r: int) -> bool:
    """Whether a single-provider tree no sharing provider serves can take the
    unsuffixed group alone: its one candidate is everything on the root.

    Most hosts of most clouds are such trees; this is what the general
    search would find for them, without its bookkeeping.
    """
    g = plan.unsuffixed
    snap = plan.snapshot
    if (g.tree_root is not None and g.tree_root != r) or r in g.banned:
        return False
    if g.members is not None and r not in g.members:
        return False
    traits = snap.traits[r]
    if not g.forbidden.isdisjoint(traits):
        return False
    for any_of in g.required:
        if any_of.isdisjoint(traits):
            return False
    inventory = snap.inventory[r]
    usage = snap.used.get(snap.uuids[r], _NO_USAGE)
    for rc, amount in g.resources:
        lim = inventory.get(rc)
        if lim is None or not _fits(lim, usage.get(rc, 0), amount):
            return False
    return True


class _AnchorSearch:
    """The backtracking state of one anchor's search.

    Breadth-first keeps one of these suspended per anchor it has opened, so
    the state lives in one slotted object (rather than closures and their
    cells) and what a request does not need is never allocated: fewer
    objects for the garbage collector to walk over and over.
    """

    __slots__ = (
        "chosen",
        "completions",
        "isolated",
        "keys",
        "plan",
        "remaining",
        "slots",
        "snap",
        "subtree_picks",
        "touched",
        "tree_holder",
        "usage",
    )

    def __init__(self, plan: _Plan, slots: list[_Slot]) -> None:
        self.plan = plan
        self.snap = plan.snapshot
        self.slots = slots
        self.usage: dict[tuple[int, str], int] = {}
        self.chosen: list[list[int]] = [[] for _ in plan.groups]
        self.touched: dict[int, int] = {}
        self.completions = 0
        self.keys: dict[int, object] | None = None
        self.isolated: set[int] | None = set() if plan.isolate else None
        # root -> [provider, count], to allow one provider per tree before 1.29.
        self.tree_holder: dict[int, list] | None = (
            None if plan.nested_aware else {})
        subtrees = plan.subtrees
        self.subtree_picks: list[list[int]] = [[] for _ in subtrees]
        # Slots still to come, per position and same_subtree constraint.
        self.remaining: list[dict[int, list[_Slot]]] | None = None
        if subtrees:
            self.remaining = [
                {sid: [t for t in slots[k + 1:] if t.group_pos in subtrees[sid]]
                 for sid in slots[k].subtrees}
                for k in range(len(slots))
            ]

    def admissible(self, slot: _Slot, p: int, k: int) -> bool:
        if self.isolated is not None and slot.suffixed and p in self.isolated:
            return False
        snap = self.snap
        if slot.amounts:
            usage = self.usage
            for rc, amount in slot.amounts:
                already = usage.get((p, rc), 0)
                if already:
                    lim = snap.inventory[p][rc]
                    total = already + amount
                    used = snap.used.get(snap.uuids[p], _NO_USAGE).get(rc, 0)
                    if used + total > lim[CAPACITY] or total > lim[MAX_UNIT]:
                        return False
            if self.tree_holder is not None:
                held = self.tree_holder.get(snap.root[p])
                if held is not None and held[0] != p:
                    return False
        for sid in slot.subtrees:
            picks = set(self.subtree_picks[sid])
            picks.add(p)
            top = _lca(snap, picks)
            if top is None:
                return False
            if top in picks:
                continue
            chain = []
            node = top
            while node != -1:
                chain.append(node)
                node = snap.parent[node]
            if not any(
                    any(a in later.option_set for a in chain)
                    for later in self.remaining[k][sid]):
                return False
        return True

    def place(self, slot: _Slot, p: int, sign: int) -> None:
        usage = self.usage
        for rc, amount in slot.amounts:
            key = (p, rc)
            total = usage.get(key, 0) + sign * amount
            if total:
                usage[key] = total
            else:
                del usage[key]
        touched = self.touched
        touched[p] = touched.get(p, 0) + sign
        if sign > 0:
            self.chosen[slot.group_pos].append(p)
            for sid in slot.subtrees:
                self.subtree_picks[sid].append(p)
        else:
            self.chosen[slot.group_pos].pop()
            for sid in slot.subtrees:
                self.subtree_picks[sid].pop()
        if self.isolated is not None and slot.suffixed:
            if sign > 0:
                self.isolated.add(p)
            else:
                self.isolated.discard(p)
        if slot.amounts and self.tree_holder is not None:
            r = self.snap.root[p]
            held = self.tree_holder.get(r)
            if held is None:
                self.tree_holder[r] = [p, 1]
            else:
                held[1] += sign
                if not held[1]:
                    del self.tree_holder[r]

    def unsuffixed_traits_ok(self) -> bool:
        plan = self.plan
        traits: set[str] = set()
        for p in self.chosen[plan.groups.index(plan.unsuffixed)]:
            traits |= self.snap.traits[p]
        return all(not any_of.isdisjoint(traits) for any_of in plan.unsuffixed.required)

    def symmetry_key(self, p: int) -> object:
        # Only needed once a dead end shows up, so computed on demand.  A
        # provider already holding part of this candidate is not
        # interchangeable with its twins: it gets no key.
        if self.touched.get(p):
            return None
        if self.keys is None:
            self.keys = {}
        key = self.keys.get(p, _UNSET)
        if key is _UNSET:
            key = self.keys[p] = self.snap.symmetry_key(p)
        return key

    def walk(self, k: int) -> Iterator[tuple[dict, list]]:
        if k == len(self.slots):
            self.completions += 1
            yield dict(self.usage), [list(c) for c in self.chosen]
            return
        slot = self.slots[k]
        dead: set | None = None
        for p in slot.options:
            if dead:
                key = self.symmetry_key(p)
                if key is not None and key in dead:
                    continue
            if not self.admissible(slot, p, k):
                key = self.symmetry_key(p)
                if key is not None:
                    dead = dead or set()
                    dead.add(key)
                continue
            self.place(slot, p, 1)
            before = self.completions
            if not slot.closes_unsuffixed or self.unsuffixed_traits_ok():
                yield from self.walk(k + 1)
            self.place(slot, p, -1)
            if self.completions == before:
                key = self.symmetry_key(p)
                if key is not None:
                    dead = dead or set()
                    dead.add(key)
