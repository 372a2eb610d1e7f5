"""GET /allocation_candidates' answer: the engine's one entry point.

:func:`answer` takes the world as it stands (a :class:`Source`: the
snapshot, the names, where to keep things, the codec it was given), a
typed request and what the caller wants kept, and hands back the
candidates and the summaries of the providers around them as typed values
(:class:`Answer`): the checks Placement makes before searching
(below), the search (engine.search, engine.extensions), a
limited answer kept tree by tree (engine.rounds), the summaries
(engine.summaries) and, when asked, why trees yield nothing
(engine.explain) and how many more instances fit (engine.headroom_answer).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, TypedDict

from allotment.engine import extensions, rounds, search, whatif
from allotment.engine.codec import Codec
from allotment.engine.explain import Explanation, explain
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.headroom_answer import HeadroomAnswer, headroom_of
from allotment.engine.live import LiveSnapshot
from allotment.engine.packed import Packed
from allotment.engine.plan import Group
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.engine.summaries import (
    ProviderSummary,
    cut_in_nested_world,
    kept_summaries,
    limited_summary_uuids,
    summary,
)

__all__ = ["Answer", "Options", "ProviderSummary", "Source", "UnknownName", "answer"]


class Names(Protocol):
    classes: frozenset[str]
    # Trait name -> its rank: summaries list traits in this order.
    trait_rank: Mapping[str, int]


class Memo(Protocol):
    def section(self, kind: Hashable) -> dict:
        """The entries kept of ``kind``, read and written directly."""


class Source(Protocol):
    """The world an answer is worked out from, held still meanwhile
    (``allotment.world.model.World`` is one)."""

    snapshot: LiveSnapshot
    names: Names
    # Changes whenever ``names`` does.
    names_version: int
    # Where what is made of the world is kept between requests.
    cache: Memo
    # What answers are kept encoded with; None: nothing is.
    codec: Codec | None


@dataclass(frozen=True)
class Answer:
    # Packed trees (whole answers kept packed) only when asked for.
    candidates: list[search.Candidate | Packed]
    summaries: list[ProviderSummary]
    # Only when asked for (an extension, see docs/explain.md).
    explanation: Explanation | None = None
    # The same summaries tree by tree, where they describe whole trees (from
    # 1.29): each tree's tuple is the same object from one request to the
    # next while the tree's providers stay as they are.
    by_tree: list[tuple[ProviderSummary, ...]] | None = None
    # Where the renderer keeps what it makes of the summaries and of reused
    # candidates (the world's cache); None for an answer with neither.
    cache: Memo | None = None
    # The answer already encoded, when the caller asked for it encoded and
    # the request is one whose answer is kept tree by tree (engine.rounds);
    # candidates and summaries are then empty.
    encoded: rounds.Assembled | None = None
    # Trees answered from what was kept.
    kept_hits: int = 0
    # Per candidate, for a request about another world (engine.whatif).
    what_if: list[whatif.WhatIf] | None = None
    # Only when asked for (an extension, see docs/extensions/headroom.md).
    headroom: HeadroomAnswer | None = None


EMPTY = Answer([], [])


class Options(TypedDict, total=False):
    """:func:`answer`'s keyword arguments, for whoever passes them on."""

    max_candidates: int
    strategy: str
    randomize: bool
    rng: random.Random | None
    rotate: bool
    explain_limit: int | None
    packed: bool
    encoded_as: Hashable | None
    headroom: bool


def answer(
    source: Source,
    request: AllocationCandidatesRequest | ExtendedRequest,
    *,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
    rotate: bool = False,
    explain_limit: int | None = None,
    packed: bool = False,
    encoded_as: Hashable | None = None,
    headroom: bool = False,
) -> Answer:
    """Candidates for ``request`` over ``source`` and the summaries of the
    providers around them.

    Raises :class:`UnknownName` for resource classes or traits that do not
    exist, in the order Placement checks them, and answers nothing where
    Placement gives up early (:func:`nothing_to_search`).  ``max_candidates``,
    ``strategy``, ``randomize`` and ``rng`` are the search's (see
    ``search.find_candidates``).  With ``rotate`` (and not ``randomize``)
    an answer kept tree by tree starts its rounds at a host that moves on
    as the world changes (engine.rotation); other answers are in the
    deterministic order.  With ``explain_limit`` the answer also
    says why up to that many trees yield nothing.  What the caller wants
    kept: with ``packed`` a tree whose whole answer is kept packed by the
    source's codec may stand in the candidates as one :class:`Packed`; with
    ``encoded_as`` (a shape of answer the codec writes) an answer kept tree
    by tree comes encoded in that shape.  With ``headroom`` the answer also
    says how many more instances of the request fit
    (engine.headroom_answer), in the same state of the world.
    """
    found = _candidates(source, request, max_candidates=max_candidates, strategy=strategy,
                        randomize=randomize, rng=rng, rotate=rotate,
                        explain_limit=explain_limit, packed=packed, encoded_as=encoded_as)
    if headroom:
        found = dataclasses.replace(found, headroom=headroom_of(source, request))
    return found


def _candidates(source: Source, request: AllocationCandidatesRequest | ExtendedRequest, *,
                max_candidates: int, strategy: str, randomize: bool,
                rng: random.Random | None, rotate: bool, explain_limit: int | None,
                packed: bool, encoded_as: Hashable | None) -> Answer:
    plain = not isinstance(request, ExtendedRequest)
    ext = extensions.extend(request)
    if not plain and ext.is_what_if:
        return _what_if(source, ext, max_candidates=max_candidates, strategy=strategy,
                        randomize=randomize, rng=rng, explain_limit=explain_limit)
    request = ext.base
    snap, names = source.snapshot, source.names
    if nothing_to_search(snap, ext, names.classes, names.trait_rank):
        if explain_limit is None:
            return EMPTY
        return Answer([], [], explain(snap, ext, tree_limit=explain_limit))
    codec = source.codec
    if (encoded_as is not None and codec is not None and plain and max_candidates < 0
            and explain_limit is None and rounds.serves(snap, request)):
        trait_rank, uuids = names.trait_rank, snap.uuids
        encoded = rounds.assemble(
            snap, source.cache.section, source.names_version, request,
            codec.encoder(encoded_as),
            lambda members: tuple(summary(snap, uuids[m], trait_rank, ()) for m in members),
            rng=(rng or random.Random()) if randomize else None, rotate=rotate)
        return Answer([], [], encoded=encoded, kept_hits=encoded.reused)
    hits = snap.kept_hits()
    candidates = list(extensions.find_extended_candidates(
        snap, ext, max_candidates=max_candidates, strategy=strategy,
        randomize=randomize, rng=rng, packer=codec if packed else None))
    hits = snap.kept_hits() - hits
    explanation = None
    if explain_limit is not None:
        caps = [c for c in (request.limit, max_candidates) if c is not None and c >= 0]
        # Trees can only have been cut off when the answer is full.
        answered = ({c.anchor for c in candidates}
                    if caps and len(candidates) >= min(caps) else None)
        explanation = explain(snap, ext, tree_limit=explain_limit, answered_roots=answered)
    used, trees = search.provider_summary_trees(
        snap, candidates, nested_aware=request.nested_aware)
    if used is not None and cut_in_nested_world(snap, request, candidates):
        used = limited_summary_uuids(snap, ext, used, max_candidates, strategy)
    summaries, by_tree = kept_summaries(snap, source.cache.section, names.trait_rank,
                                        source.names_version, used, trees)
    return Answer(candidates, summaries, explanation, by_tree, source.cache, kept_hits=hits)


def _what_if(source: Source, ext: ExtendedRequest, *, max_candidates: int, strategy: str,
             randomize: bool, rng: random.Random | None,
             explain_limit: int | None) -> Answer:
    """:func:`answer` for a request about the world without some consumers
    (engine.whatif), worked out over a copy of the world.  The answer is
    not kept; with preemption the preemptible consumers, the world without
    them and the eviction sets found are kept for as long as the world
    stays as it is (engine.whatif), unless consumers are ignored."""
    real, names = source.snapshot, source.names
    ignored = ext.ignored
    snap = whatif.without(real, ignored) if ignored else real
    wanted = dataclasses.replace(ext, ignored=(), preemptible=None)
    preempt = ext.preemptible is not None
    wide = snap
    if preempt:
        wide, on_provider, evictions = whatif.preemptible_world(
            real, ignored, ext.preemptible, snap)
    if nothing_to_search(wide, wanted, names.classes, names.trait_rank):
        if explain_limit is None:
            return Answer([], [], what_if=[])
        explanation = explain(snap, wanted, tree_limit=explain_limit)
        if preempt:
            explanation = _preemption_helps(explanation, wide, wanted)
        return Answer([], [], explanation, what_if=[])

    def found(world: LiveSnapshot, request: ExtendedRequest, cap: int) -> Iterator:
        return extensions.find_extended_candidates(
            world, request, max_candidates=cap, strategy=strategy,
            randomize=randomize, rng=rng)

    candidates = list(found(snap, wanted, max_candidates))
    notes = [whatif.WhatIf(whatif.displaced(real, c, ignored) if ignored else None,
                           () if preempt else None) for c in candidates]
    caps = [c for c in (wanted.base.limit, max_candidates) if c is not None and c >= 0]
    cap = min(caps) if caps else None
    if preempt and (cap is None or len(candidates) < cap):
        # Every candidate of the world without any preemptible consumer;
        # those that fit as things are were found above.
        unlimited = dataclasses.replace(
            wanted, base=dataclasses.replace(wanted.base, limit=None))
        for c in found(wide, unlimited, -1):
            if cap is not None and len(candidates) >= cap:
                break
            if evictions is None:
                evicts = whatif.eviction_set(snap, c, on_provider)
            else:
                evicts = _kept_eviction_set(evictions, snap, c, on_provider)
            if evicts:
                candidates.append(c)
                notes.append(whatif.WhatIf(
                    whatif.displaced(real, c, ignored) if ignored else None, evicts))
    explanation = None
    if explain_limit is not None:
        answered = {c.anchor for c in candidates} if cap and len(candidates) >= cap else None
        explanation = explain(snap, wanted, tree_limit=explain_limit, answered_roots=answered)
        if preempt:
            explanation = _preemption_helps(explanation, wide, wanted)
    used, trees = search.provider_summary_trees(
        snap, candidates, nested_aware=wanted.base.nested_aware)
    summaries, by_tree = kept_summaries(snap, source.cache.section, names.trait_rank,
                                        source.names_version, used, trees)
    return Answer(candidates, summaries, explanation, by_tree, source.cache, what_if=notes)


def _kept_eviction_set(evictions: dict, snap: LiveSnapshot, cand: search.Candidate,
                       on_provider: Mapping[str, list[whatif.Holding]],
                       ) -> tuple[whatif.Holding, ...] | None:
    """``cand``'s eviction set, kept in ``evictions`` for this state of the world."""
    if cand.reused:
        # The same object comes back while its tree stays as it is: known by
        # identity (held here, so its id is never another's).
        key: Hashable = id(cand)
    else:
        key = tuple(sorted((p, tuple(sorted(res.items())))
                           for p, res in cand.allocations.items()))
    kept = evictions.get(key)
    if kept is not None and (not cand.reused or kept[0] is cand):
        return kept[1]
    evicts = whatif.eviction_set(snap, cand, on_provider)
    evictions[key] = (cand, evicts)
    return evicts


def _preemption_helps(explanation: Explanation, wide: LiveSnapshot,
                      wanted: ExtendedRequest) -> Explanation:
    """``explanation`` with each failing tree saying whether it would yield
    a candidate were every preemptible consumer gone."""
    plan = extensions.compile_plan(wide, wanted)
    index = wide.index
    return dataclasses.replace(explanation, failing=tuple(
        dataclasses.replace(t, details={
            **t.details,
            "preemption_helps": t.root in index and extensions.tree_yields(plan, index[t.root])})
        for t in explanation.failing))


# ---------------------------------------------------------------------------
# The checks Placement makes before it searches, in the order it makes them.
#
# Unknown resource classes and traits are refused (:class:`UnknownName`, which
# the service turns into a 400); where Placement gives up early with an empty
# answer (no provider in a member_of aggregate, an unknown in_tree provider,
# no room for some class at all, no root with the root traits), so do we,
# before looking at the rest of the request.


class UnknownName(Exception):
    """A resource class or trait the request names does not exist (the
    message is Placement's)."""


class _NoCandidates(Exception):
    """Placement gives up on the request early and answers an empty result."""


def nothing_to_search(snap: LiveSnapshot, ext: ExtendedRequest, classes: frozenset[str],
                      trait_rank: Mapping[str, int]) -> bool:
    """Whether Placement answers ``ext`` over ``snap`` (whose names are
    ``classes`` and the traits of ``trait_rank``) with nothing, before
    searching.  Raises :class:`UnknownName` where it refuses the request."""
    request = ext.base
    named_classes, named_traits = _named(request)
    known_classes = named_classes & classes
    known_traits = {t for t in named_traits if t in trait_rank}
    try:
        _check_root_traits(snap, request, known_traits)
        for k, group in enumerate(request.groups):
            try:
                _check_group(snap, group, known_classes, known_traits, ext.can_split)
            except UnknownName:
                # Placement searches each group before it looks at the
                # names of the next: an earlier group matching nothing
                # on its own ends the request before this name is met.
                if any(_alone_matches_nothing(snap, request, g)
                       for g in request.groups[:k]):
                    return True
                raise
    except _NoCandidates:
        return True
    return False


def _named(request: AllocationCandidatesRequest) -> tuple[set[str], set[str]]:
    classes: set[str] = set()
    traits = set(request.root_required) | set(request.root_forbidden)
    for g in request.groups:
        classes.update(g.resources)
        traits.update(g.forbidden_traits)
        for any_of in g.required_traits:
            traits.update(any_of)
    return classes, traits


def _check_traits(names: Iterable[str], known: set[str]) -> None:
    missing = sorted(set(names) - known)
    if missing:
        # Placement stops at the first trait it cannot find.
        raise UnknownName(f"No such trait(s): {missing[0]}.")


def _check_root_traits(snap: LiveSnapshot, request: AllocationCandidatesRequest,
                       traits: set[str]) -> None:
    required, forbidden = request.root_required, request.root_forbidden
    if not (required or forbidden):
        return
    _check_traits(required, traits)
    _check_traits(forbidden, traits)
    if not any(required <= have and forbidden.isdisjoint(have)
               for have in snap.root_trait_sets()):
        raise _NoCandidates


def _check_group(snap: LiveSnapshot, group: SearchGroup,
                 classes: set[str], traits: set[str],
                 can_split: frozenset[str] = frozenset()) -> None:
    for rc in group.resources:
        if rc not in classes:
            raise UnknownName(
                "Invalid resource class in resources parameter: "
                f"No such resource class {rc}.")
    if group.member_of:
        members: set[int] | None = None
        for any_of in group.member_of:
            found = set().union(*(snap.agg_members.get(a, ()) for a in any_of))
            members = found if members is None else members & found
        if not members:
            raise _NoCandidates
    for any_of in group.required_traits:
        _check_traits(any_of, traits)
    _check_traits(group.forbidden_traits, traits)
    tree_root = None
    if group.in_tree is not None:
        i = snap.index.get(group.in_tree)
        if i is None:
            raise _NoCandidates
        tree_root = snap.root[i]
    for rc, amount in group.resources.items():
        if rc in can_split and not group.suffix:
            # Divided amounts need room on several providers, not on one.
            continue
        if tree_root is None:
            holders: Iterable[int] = snap.by_rc.get(rc, ())
        else:
            holders = snap.members_with(tree_root, rc)
        wanted = ((rc, amount),)
        if not any(snap.has_room(p, wanted) for p in holders):
            raise _NoCandidates


def _alone_matches_nothing(snap: LiveSnapshot, request: AllocationCandidatesRequest,
                           group: SearchGroup) -> bool:
    """Whether ``group``, searched on its own (as Placement searches each
    group before combining them), has no candidate."""
    if group.resourceless:
        # Only its traits and aggregates pick providers (in any tree).
        g = Group(snap, group)
        return g.never_matches() or not any(g.single_ok(snap, p) for p in snap.index.values())
    alone = dataclasses.replace(request, groups=(group,), group_policy=None,
                                same_subtrees=(), limit=None, nested_aware=True)
    return next(search.find_candidates(snap, alone), None) is None
