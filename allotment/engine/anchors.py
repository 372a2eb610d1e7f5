"""The search for every candidate anchored at one root.

Each anchor's search is a backtracking walk over *slots*: one decision per
suffixed group and one per resource class of the unsuffixed group, each with
the providers (of the anchor's tree or sharing with it) that may take it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator

from allotment.engine import kept
from allotment.engine.forest import lca
from allotment.engine.plan import (
    NO_USAGE,
    READY,
    Group,
    Plan,
    build_candidate,
    may_repeat,
    portable,
)
from allotment.engine.snapshot import CAPACITY, MAX_UNIT
from allotment.engine.unsuffixed import (
    lonely_search,
    tree_kind,
    tree_search,
    unsuffixed_options,
)

_UNSET = object()


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

    def __init__(self, group_pos: int, group: Group,
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


def _suffixed_options(plan: Plan, g: Group, r: int) -> list[int]:
    snap = plan.snapshot
    if g.resourceless:
        base: Iterable[int] = snap.tree_members(r)
    else:
        base = snap.members_with(r, g.resources[0][0])
    out = [p for p in base if g.single_ok(snap, p)]
    out.extend(s for s in snap.sharing_by_anchor.get(r, ()) if g.single_ok(snap, s))
    return out


def _build_slots(plan: Plan, r: int, rng: random.Random | None) -> list[_Slot] | None:
    slots: list[_Slot] = []
    u = plan.unsuffixed
    groups = plan.groups
    if u is not None:
        upos = groups.index(u)
        for rc, amount in u.resources:
            opts = unsuffixed_options(plan, u, r, rc, amount)
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


def _enough_capacity(plan: Plan, slots: list[_Slot]) -> bool:
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
            free += inventory[p][rc][CAPACITY] - used.get(uuids[p], NO_USAGE).get(rc, 0)
            if free >= need:
                break
        if free < need:
            return False
    return True


def search_anchor(plan: Plan, r: int, rng: random.Random | None,
                  keep: bool = True) -> Iterator[tuple[dict, list]]:
    """Yield ``(usage, chosen)`` for every assignment anchored at root ``r``.

    ``usage`` maps (provider, rc) to the summed amount; ``chosen`` lists, per
    request group in request order, the providers picked for it.  The
    results are kept between requests (engine.kept) unless ``keep`` is
    false: a caller that keeps what it makes of them itself.
    """
    if not plan.root_ok(r):
        return iter(())
    snap = plan.snapshot
    if plan.only_unsuffixed and snap.is_lonely(r):
        found = lonely_search(plan)(r)
        if found is None:
            # A sharing root alone: other anchors may reach the same
            # candidate, so it goes through deduplication.
            g = plan.unsuffixed
            return iter((({(r, rc): amount for rc, amount in g.resources},
                          [[r] * len(g.resources)]),))
        return iter(((READY, found),)) if found else iter(())
    if plan.only_unsuffixed and plan.nested_aware:
        return tree_search(plan, r, rng, keep)
    def search() -> Iterator[tuple]:
        slots = _build_slots(plan, r, rng)
        return iter(()) if slots is None else _AnchorSearch(plan, slots).walk(0)

    if type(plan) is not Plan or not keep:
        # A subclass (the extensions') may change what the search finds.
        return search()
    return kept.tree_answer(plan, r, rng, _kind, search, _finisher)


def kept_peeker(plan: Plan, rng: random.Random | None,
                ) -> Callable[[int], kept.Taken | None] | None:
    """For the standard search (:func:`search_anchor`): a function of a
    root giving the results kept of its tree, which the search would hand
    out first and unchanged (see ``kept.peeker``), or None where it must
    search.  None when nothing is kept for this request.  A tree's answer
    is kept only once its root passed ``plan.root_ok``, and its stamp
    changes with the root, so a kept answer needs no such check again."""
    if rng is not None:
        return None
    if plan.only_unsuffixed and plan.nested_aware:
        # Single-provider trees no sharing provider serves take the
        # lonely shortcut before this is asked.
        return kept.peeker(plan, tree_kind)
    if type(plan) is not Plan:
        return None
    return kept.peeker(plan, _kind)


def _finisher(plan: Plan, r: int) -> Callable[[tuple], tuple]:
    """What to keep (and hand out) for each result of the search of ``r``'s
    tree: a finished candidate where no other anchor can reach the same
    candidate, so later requests of the kind neither build it again nor
    deduplicate it."""
    repeats = may_repeat(plan, r)

    def finish(found: tuple) -> tuple:
        usage, chosen = found
        if usage is READY or (repeats and portable(plan, r, chosen)):
            return found
        return READY, build_candidate(plan, r, usage, chosen)

    return finish


def _kind(plan: Plan) -> tuple:
    """What the general search's answer for a tree depends on besides the
    tree (see engine.kept)."""
    return ("general", tuple((g.suffix, g.signature()) for g in plan.groups), plan.isolate,
            plan.request.same_subtrees, plan.root_required, plan.root_forbidden,
            plan.nested_aware)


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

    def __init__(self, plan: Plan, slots: list[_Slot]) -> None:
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
                    used = snap.used.get(snap.uuids[p], NO_USAGE).get(rc, 0)
                    if used + total > lim[CAPACITY] or total > lim[MAX_UNIT]:
                        return False
            if self.tree_holder is not None:
                held = self.tree_holder.get(snap.root[p])
                if held is not None and held[0] != p:
                    return False
        for sid in slot.subtrees:
            picks = set(self.subtree_picks[sid])
            picks.add(p)
            top = lca(snap, picks)
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
