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
from collections.abc import Callable, Iterable, Iterator

from allotment.engine.anchors import kept_peeker, search_anchor
from allotment.engine.kept import Taken
from allotment.engine.packed import PACKED, Packed, Packer
from allotment.engine.plan import (
    READY,
    Candidate,
    Plan,
    build_candidate,
    may_repeat,
    portable,
)
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.snapshot import Snapshot
from allotment.engine.unsuffixed import lonely_search

__all__ = ["STRATEGIES", "Candidate", "find_candidates", "provider_summary_uuids",
           "tree_candidates"]

STRATEGIES = ("depth-first", "breadth-first")


def find_candidates(
    snapshot: Snapshot,
    request: AllocationCandidatesRequest,
    *,
    limit: int | None = None,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
    packer: Packer | None = None,
) -> Iterator[Candidate | Packed]:
    """Yield the candidates satisfying ``request``, lazily.

    ``limit`` defaults to ``request.limit``; ``max_candidates`` mirrors
    ``[placement] max_allocation_candidates`` (negative: unlimited).
    ``strategy`` decides whether one anchor's candidates are exhausted before
    the next anchor is tried (``depth-first``) or anchors take turns
    (``breadth-first``), which decides which candidates ``max_candidates``
    keeps.  With a ``limit`` the anchors always take turns (see
    :func:`_spread`).  Without ``randomize`` the order is a deterministic
    function of the snapshot and request.

    With a ``packer``, where every candidate of every tree is wanted in the
    depth-first order (no limit, no ``max_candidates``, no random order),
    a tree whose whole answer is kept packed (by ``packer``) is yielded as
    one :class:`~allotment.engine.packed.Packed` in the place of its
    candidates.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown generation strategy {strategy!r}")
    if limit is None:
        limit = request.limit
    pool = max_candidates if max_candidates is not None and max_candidates >= 0 else None
    if limit == 0 or pool == 0:
        return iter(())
    if randomize and rng is None:
        rng = random.Random()
    if not randomize:
        rng = None
    plan = Plan.compile(snapshot, request)
    if plan is None:
        return iter(())
    if limit is None:
        if pool is None and rng is None and strategy == "depth-first":
            plan.packer = packer
        results = _dedupe(plan, _interleave(plan, strategy, rng))
        if rng is not None and pool is None:
            # Everything is wanted anyway, so a true shuffle costs nothing extra.
            everything = list(results)
            rng.shuffle(everything)
            return iter(everything)
        return itertools.islice(results, pool)
    return _spread(plan, strategy, rng, limit, pool)


def _spread(plan: Plan, strategy: str, rng: random.Random | None,
            limit: int, pool: int | None) -> Iterator[Candidate]:
    """The ``limit`` candidates a limited request gets.

    Schedulers ask for many candidates and then choose among *hosts*, so a
    limited answer spreads over as many anchors as it can: the anchors take
    turns, one candidate each per round, over the candidates the strategy
    generates before ``max_allocation_candidates`` stops it.  Upstream keeps
    an arbitrary selection of that generated set, which reaches many hosts but
    fewer than this does.
    """
    if pool is None or strategy == "breadth-first":
        # Breadth-first order takes turns already, and without a cap on
        # generation the turns can be taken lazily over every anchor.
        results = _dedupe(plan, _interleave(plan, "breadth-first", rng))
        return itertools.islice(results, limit if pool is None else min(limit, pool))
    generated = list(itertools.islice(_dedupe(plan, _interleave(plan, strategy, rng)), pool))
    if len(generated) <= limit:
        return iter(generated)
    by_anchor: dict[str, list[Candidate]] = {}
    for cand in generated:
        by_anchor.setdefault(cand.anchor, []).append(cand)
    turns = itertools.zip_longest(*by_anchor.values())
    taken = (cand for turn in turns for cand in turn if cand is not None)
    return itertools.islice(taken, limit)


def provider_summary_uuids(
    snapshot: Snapshot, candidates: Iterable[Candidate | Packed], *, nested_aware: bool
) -> list[str]:
    """UUIDs of the providers to describe in ``provider_summaries``.

    From 1.29 (``nested_aware``) Placement describes every provider of every
    tree that contributes resources to a candidate, so clients see the whole
    tree; before that, only the providers that contribute resources.

    Before 1.29 the providers come in UUID order; from 1.29 tree by tree,
    roots in UUID order and each tree's providers in UUID order (cheaper
    than sorting every provider of a big answer, and as deterministic).
    """
    used, trees = provider_summary_trees(snapshot, candidates, nested_aware=nested_aware)
    if trees is None:
        return used
    uuids = snapshot.uuids
    wanted: list[str] = []
    for members in trees:
        wanted.extend(map(uuids.__getitem__, members))
    return wanted


def provider_summary_trees(
    snapshot: Snapshot, candidates: Iterable[Candidate | Packed], *, nested_aware: bool
) -> tuple[list[str], None] | tuple[None, list[tuple[int, ...]]]:
    """The providers :func:`provider_summary_uuids` names, either as those
    UUIDs (where summaries describe providers one by one) or, where they
    describe whole trees, as each tree's member positions, trees in order:
    a caller may then keep what it makes of a tree as long as the tree's
    providers stay as they are."""
    many = snapshot.trees_of_many() if nested_aware else None
    index, root, uuids = snapshot.index, snapshot.root, snapshot.uuids
    if many and not snapshot.sharing_by_anchor:
        # Without sharing providers every provider of a candidate is in the
        # tree of its anchor: the anchors name the trees.
        roots = {index[u] for u in {cand.anchor for cand in candidates}}
    else:
        used: set[str] = set()
        add = used.update
        for cand in candidates:
            add(cand.providers if type(cand) is Packed else cand.allocations)
        if not many:
            # Every tree is one provider, or only the providers used are wanted.
            return sorted(used), None
        roots = {root[index[u]] for u in used}
    if len(roots) * 8 > len(snapshot.roots):
        # Most trees: walk the roots, which are kept in UUID order.
        order: Iterable[int] = (r for r in snapshot.roots if r in roots)
    else:
        order = sorted(roots, key=uuids.__getitem__)
    # A tree's members are kept in UUID order too.
    members = many.get
    return None, [members(r) or (r,) for r in order]


# ---------------------------------------------------------------------------
# Enumeration


def _interleave(plan: Plan, strategy: str, rng: random.Random | None,
                results: Callable[..., Iterator[tuple]] | None = None,
                ) -> Iterator[tuple[int, dict, list]]:
    """``(anchor, usage, chosen)`` of every anchor's ``results`` (by
    default the standard search), in the order of the generation strategy."""
    # Single-provider trees have one candidate at most, the same in either
    # order: answered straight away when the standard search is asked for.
    one = lonely_search(plan) if results is None and plan.only_unsuffixed else None
    results = results or search_anchor
    anchors = plan.anchors(rng)
    # What is kept of a tree's results, looked at without setting up the
    # tree's search (see anchors.kept_peeker).
    peek = kept_peeker(plan, rng) if results is search_anchor else None
    if strategy == "depth-first":
        for r, single in _singles(one, anchors):
            if single is not None:
                if single:
                    yield r, READY, single
                continue
            if peek is not None:
                held = peek(r)
                if held is not None and held.whole:
                    for found in held:
                        yield (r, *found)
                    continue
            for found in results(plan, r, rng):
                yield (r, *found)
        return
    # Breadth-first: one candidate per anchor per round, opening anchors
    # lazily so the first round over a big world stops as soon as the caller
    # has enough.  A tree whose results are kept gives its first one from
    # what is kept, and is searched only if a later round wants more of
    # it: a limit mostly ends the first round.
    active: list[tuple[int, Iterator | Taken]] = []
    for r, single in _singles(one, anchors):
        if single is not None:
            if single:
                yield r, READY, single
            continue
        if peek is not None:
            held = peek(r)
            if held:
                yield (r, *held[0])
                if len(held) > 1 or not held.whole:
                    active.append((r, held))
                continue
            if held is not None and held.whole:
                continue  # kept as having no results
        gen = results(plan, r, rng)
        first = next(gen, None)
        if first is not None:
            yield (r, *first)
            active.append((r, gen))
    while active:
        still = []
        for r, gen in active:
            if type(gen) is Taken:
                gen = _after_first(plan, r, rng, gen, results)
            found = next(gen, None)
            if found is not None:
                yield (r, *found)
                still.append((r, gen))
        active = still


def _after_first(plan: Plan, r: int, rng: random.Random | None, held: Taken,
                 results: Callable[..., Iterator[tuple]]) -> Iterator[tuple]:
    """The results of ``r``'s tree after the first, which came from
    ``held`` (what was kept of them): the rest of ``held`` when that is all
    of them, else the tree's own results past the first (which, while the
    tree's stamp holds, begin with what was kept)."""
    if held.whole:
        return itertools.islice(held, 1, None)
    rest = results(plan, r, rng)
    next(rest, None)
    return rest


def _singles(one: Callable[[int], Candidate | bool | None] | None,
             anchors: list[int]) -> Iterator[tuple[int, Candidate | bool | None]]:
    """Each anchor with what the single-provider shortcut says of it (its
    candidate, False for none, None when the anchor's search must decide)."""
    if one is None:
        return ((r, None) for r in anchors)
    return ((r, one(r)) for r in anchors)


def _dedupe(plan: Plan, found: Iterator[tuple[int, dict, list]],
            ) -> Iterator[Candidate | Packed]:
    seen: set = set()
    last, repeats = -1, True
    for r, usage, chosen in found:
        if usage is READY or usage is PACKED:
            # Already a Candidate (or a tree's packed answer), and
            # reachable from r alone.
            yield chosen
            continue
        if r != last:
            last, repeats = r, may_repeat(plan, r)
        if repeats and portable(plan, r, chosen):
            key = (frozenset(usage.items()),
                   tuple(frozenset(picks) for picks in chosen))
            if key in seen:
                continue
            seen.add(key)
        yield build_candidate(plan, r, usage, chosen)


def tree_candidates(plan: Plan, r: int,
                    rng: random.Random | None = None) -> Iterator[Candidate]:
    """The candidates anchored at root ``r``, in the order a limited
    request takes them from its tree (see :func:`_spread`; a random order
    with ``rng``), for a world no sharing provider is in: one tree's
    candidates are then never another's, so a caller may keep them tree by
    tree (engine.rounds), which it does instead of the search."""
    for usage, chosen in search_anchor(plan, r, rng, keep=False):
        yield chosen if usage is READY else build_candidate(plan, r, usage, chosen)
