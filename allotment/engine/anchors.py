"""The search for every candidate anchored at one root.

Each anchor's search is a backtracking walk over *slots*: one decision per
suffixed group and one per resource class of the unsuffixed group, each with
the providers (of the anchor's tree or sharing with it) that may take it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator

from allotment.engine.plan import NO_USAGE, Candidate, Group, Plan, fits
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE, Snapshot

_UNSET = object()
# Marks a search result that is already a Candidate (see search_anchor).
READY = object()


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


def _unsuffixed_options(plan: Plan, g: Group, r: int,
                        rc: str, amount: int) -> list[int]:
    snap = plan.snapshot
    inventory, used, traits, uuids = snap.inventory, snap.used, snap.traits, snap.uuids
    banned, members, forbidden = g.banned, g.members, g.forbidden
    if r in banned:
        return []
    # An aggregate on the root spans the whole tree.
    anyone = members is None or r in members
    out = []
    if g.tree_root is None or g.tree_root == r:
        for p in snap.members_with(r, rc):
            lim = inventory[p][rc]
            # fits(), inlined: this runs for every class of every tree.
            if (not lim[MIN_UNIT] <= amount <= lim[MAX_UNIT] or amount % lim[STEP_SIZE]
                    or used.get(uuids[p], NO_USAGE).get(rc, 0) + amount > lim[CAPACITY]):
                continue
            if (banned and p in banned) or (forbidden and not forbidden.isdisjoint(traits[p])):
                continue
            if not anyone and p not in members:
                continue
            out.append(p)
    if g.tree_root is None:
        for s in snap.sharing_by_anchor.get(r, ()):
            lim = inventory[s].get(rc)
            if lim is None or not fits(lim, used.get(uuids[s], NO_USAGE).get(rc, 0), amount):
                continue
            if s in g.banned or not g.forbidden.isdisjoint(traits[s]):
                continue
            if g.members is not None and s not in g.members:
                continue
            out.append(s)
    return out


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


def search_anchor(plan: Plan, r: int,
                   rng: random.Random | None) -> Iterator[tuple[dict, list]]:
    """Yield ``(usage, chosen)`` for every assignment anchored at root ``r``.

    ``usage`` maps (provider, rc) to the summed amount; ``chosen`` lists, per
    request group in request order, the providers picked for it.
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
        options = _unsuffixed_option_lists(plan, r, rng)
        if options is None:
            return iter(())
        return _unsuffixed_product(plan, r, options)
    slots = _build_slots(plan, r, rng)
    if slots is None:
        return iter(())
    return _AnchorSearch(plan, slots).walk(0)


def _unsuffixed_option_lists(plan: Plan, r: int,
                             rng: random.Random | None) -> list[list[int]] | None:
    """The providers that may take each class of the unsuffixed group when
    it is the whole request (what _build_slots makes slots of), or None when
    some class has none or the required traits are nowhere among them."""
    u = plan.unsuffixed
    options = []
    for rc, amount in u.resources:
        opts = _unsuffixed_options(plan, u, r, rc, amount)
        if not opts:
            return None
        options.append(opts)
    if u.required:
        traits_of = plan.snapshot.traits
        have = set().union(*(traits_of[p] for opts in options for p in opts))
        if any(any_of.isdisjoint(have) for any_of in u.required):
            return None
    if rng is not None:
        for opts in options:
            rng.shuffle(opts)
    return options


def lonely_search(plan: Plan) -> Callable[[int], Candidate | bool | None]:
    """For a request of one unsuffixed group: a function of an anchor that
    answers single-provider trees no sharing provider serves without the
    general search and its bookkeeping (most hosts of most clouds are such
    trees, so this is most of the work of a big answer).

    The function returns the anchor's one candidate, ``False`` when it has
    none, and ``None`` when the general search must decide (a tree of several
    providers, one served by sharing providers, or a sharing root).  Only
    for plans with ``only_unsuffixed``; built once per plan.
    """
    if plan.lonely is None:
        plan.lonely = _lonely_search(plan)
    return plan.lonely


def _lonely_search(plan: Plan) -> Callable[[int], Candidate | bool | None]:
    snap = plan.snapshot
    g = plan.unsuffixed
    many, served = snap.trees_of_many(), snap.sharing_by_anchor
    is_sharing, traits_of, inventory, used = (
        snap.is_sharing, snap.traits, snap.inventory, snap.used)
    uuids = snap.uuids
    root_ok = plan.root_ok if plan.root_required or plan.root_forbidden else None
    tree_root, banned, members = g.tree_root, g.banned, g.members
    forbidden, required, resources = g.forbidden, g.required, g.resources
    allocates = plan.lonely_resources

    def one(r: int) -> Candidate | bool | None:
        if r in many or r in served:
            return None
        if root_ok is not None and not root_ok(r):
            return False
        if (tree_root is not None and tree_root != r) or r in banned:
            return False
        if members is not None and r not in members:
            return False
        traits = traits_of[r]
        if not forbidden.isdisjoint(traits):
            return False
        for any_of in required:
            if any_of.isdisjoint(traits):
                return False
        inv = inventory[r]
        uuid = uuids[r]
        usage = used.get(uuid, NO_USAGE)
        for rc, amount in resources:
            lim = inv.get(rc)
            # fits(), inlined: this runs once per host of the cloud.
            if (lim is None or not lim[MIN_UNIT] <= amount <= lim[MAX_UNIT]
                    or amount % lim[STEP_SIZE]
                    or usage.get(rc, 0) + amount > lim[CAPACITY]):
                return False
        if is_sharing[r]:
            return None
        return Candidate({uuid: allocates}, {"": [uuid]}, uuid)

    return one


def _unsuffixed_product(plan: Plan, r: int, options: list[list[int]]) -> Iterator[tuple]:
    """Every assignment of the unsuffixed group alone, from 1.29.

    Each class has its own providers to choose from (``options``, in the
    group's class order), and no choice limits another: the candidates are
    the product of the options (those whose providers together have the
    required traits), in the order the general search would find them.
    """
    snap = plan.snapshot
    uuids, traits, is_sharing, root = snap.uuids, snap.traits, snap.is_sharing, snap.root
    required = plan.unsuffixed.required
    wanted = plan.unsuffixed.resources
    anchor = uuids[r]
    # A candidate using only sharing providers (or those of other trees) may
    # be reached from other anchors too, and goes through deduplication; one
    # using a provider of this tree is reachable from here alone and is
    # finished here, as _dedupe would.  Mostly no class can go elsewhere.
    portable = all(any(is_sharing[p] or root[p] != r for p in opts) for opts in options)
    for combo in itertools.product(*options):
        if required:
            have = set().union(*(traits[p] for p in set(combo)))
            if any(any_of.isdisjoint(have) for any_of in required):
                continue
        if portable and all(is_sharing[p] or root[p] != r for p in combo):
            yield ({(p, rc): amount for p, (rc, amount) in zip(combo, wanted, strict=True)},
                   [list(combo)])
            continue
        # Providers in UUID order, classes by name within each (``wanted``
        # is by name); the mapping lists the same providers in that order.
        allocations: dict[str, dict[str, int]] = {}
        for uuid, (rc, amount) in sorted(zip(map(uuids.__getitem__, combo), wanted,
                                             strict=True)):
            held = allocations.get(uuid)
            if held is None:
                allocations[uuid] = {rc: amount}
            else:
                held[rc] = amount
        yield (READY, Candidate(allocations, {"": list(allocations)}, anchor))


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
