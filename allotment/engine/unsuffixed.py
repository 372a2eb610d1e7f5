"""The search for a request of one unsuffixed group (with resources).

Most requests a scheduler makes are of this form.  Each class of the group
then has its own providers to choose from, no choice limits another, and a
single-provider tree no sharing provider serves has at most one candidate:
this module answers such requests without the general backtracking search
of :mod:`allotment.engine.anchors`, which uses :func:`unsuffixed_options`
for its own slots too.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator

from allotment.engine import kept
from allotment.engine.plan import NO_USAGE, READY, Candidate, Group, Plan
from allotment.engine.records import fits
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE


def unsuffixed_options(plan: Plan, g: Group, r: int,
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


def unsuffixed_option_lists(plan: Plan, r: int,
                             rng: random.Random | None) -> list[list[int]] | None:
    """The providers that may take each class of the unsuffixed group when
    it is the whole request (what _build_slots makes slots of), or None when
    some class has none or the required traits are nowhere among them."""
    u = plan.unsuffixed
    options = []
    for rc, amount in u.resources:
        opts = unsuffixed_options(plan, u, r, rc, amount)
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
    # Only the request's own root traits: what a subclass of Plan adds to
    # root_ok (the extensions' root aggregates) is checked by search_anchor,
    # and must not end up in an answer kept for requests without it.
    root_required, root_forbidden = plan.root_required, plan.root_forbidden
    tree_root, banned, members = g.tree_root, g.banned, g.members
    forbidden, required, resources = g.forbidden, g.required, g.resources
    allocates = plan.lonely_resources

    def check(r: int) -> Candidate | bool | None:
        if (root_required or root_forbidden) and not (
                root_required <= traits_of[r] and root_forbidden.isdisjoint(traits_of[r])):
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

    memo = snap.kept_answers(("single", g.signature(), plan.root_required,
                              plan.root_forbidden))
    if memo is None:
        def one(r: int) -> Candidate | bool | None:
            if r in many or r in served:
                return None
            return check(r)
        return one
    # A snapshot that changes keeps each root's answer to this kind of
    # request until the root changes: most hosts did not since the last
    # such request, and their candidates (and what renderers made of them)
    # are reused.
    revisions = snap.position_revisions()

    def remembered(r: int) -> Candidate | bool | None:
        if r in many or r in served:
            return None
        revision = revisions[r]
        held = memo.get(r)
        if held is not None and held[0] == revision:
            memo.store.hits += 1
            return held[1]
        found = check(r)
        if found:
            found.reused = True
        memo.keep(r, revision, found, 1)
        return found

    return remembered


def unsuffixed_product(plan: Plan, r: int, options: list[list[int]]) -> Iterator[tuple]:
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


def tree_search(plan: Plan, r: int, rng: random.Random | None,
                keep: bool = True) -> Iterator[tuple]:
    """Every assignment of the unsuffixed group alone anchored at ``r``
    (from 1.29), for a tree of several providers or one that sharing
    providers serve; kept between requests (see engine.kept) unless the
    caller keeps what it makes of them itself (``keep`` false)."""
    def search() -> Iterator[tuple]:
        options = unsuffixed_option_lists(plan, r, rng)
        return iter(()) if options is None else unsuffixed_product(plan, r, options)

    if not keep:
        return search()
    return kept.tree_answer(plan, r, rng, tree_kind, search)


def tree_kind(plan: Plan) -> tuple:
    # What the unsuffixed search's answer for a tree depends on besides the
    # tree (see engine.kept).
    return ("unsuffixed", plan.unsuffixed.signature(), plan.root_required,
            plan.root_forbidden)
