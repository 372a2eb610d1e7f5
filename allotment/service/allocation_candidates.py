"""GET /allocation_candidates: check the names, search, summarise.

The search runs over the process's in-memory world (``allotment.world``),
which is brought up to date with every change committed before the request
began -- usually by one read of the change feed that finds nothing new --
and held still while the request looks at it.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from allotment import errors, telemetry
from allotment.engine import extensions, search
from allotment.engine.explain import Explanation, explain
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.live import LiveSnapshot
from allotment.engine.packed import Packed
from allotment.engine.plan import Group
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.service import candidate_rounds
from allotment.world.cache import Cache
from allotment.world.model import World
from allotment.world.sync import Replica


@dataclass(frozen=True)
class ProviderSummary:
    """What ``provider_summaries`` says about one provider."""

    uuid: str
    parent_uuid: str | None
    root_uuid: str
    traits: tuple[str, ...]
    # class name -> (capacity, used), every class the provider has inventory of
    resources: Mapping[str, tuple[int, int]]
    # Changes whenever any of the above does: renderers may keep what they
    # make of a summary for as long as its revision stays.
    revision: tuple = ()


@dataclass(frozen=True)
class CandidatesResult:
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
    # candidates (the world's cache, see world.cache); None for an answer
    # with neither.
    cache: Cache | None = None
    # The answer already encoded, when the caller asked for it encoded and
    # the request is one whose answer is kept tree by tree
    # (service.candidate_rounds); candidates and summaries are then empty.
    encoded: candidate_rounds.Assembled | None = None


EMPTY = CandidatesResult([], [])


# ---------------------------------------------------------------------------
# Checks made in the order Placement makes them


class _NoCandidates(Exception):
    """Placement gives up on the request early and answers an empty result."""


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
        raise errors.BadRequest(f"No such trait(s): {missing[0]}.")


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
            raise errors.BadRequest(
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


# ---------------------------------------------------------------------------
# The use case


def find(
    replica: Replica,
    request: AllocationCandidatesRequest | ExtendedRequest,
    *,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
    explain_limit: int | None = None,
    packed: bool = False,
    encoded_as: Hashable | None = None,
) -> CandidatesResult:
    """Candidates for ``request`` and the summaries of the providers around them.

    Raises errors.BadRequest for resource classes or traits that do not
    exist, in the order Placement checks them; where Placement gives up
    early with an empty answer (no provider in a member_of aggregate, an
    unknown in_tree provider, no room for some class at all), so do we,
    before looking at the rest of the request.  With ``explain_limit`` the
    result also says why up to that many trees yield nothing.  With
    ``packed`` a tree whose whole answer is kept packed may stand in the
    candidates as one :class:`Packed` (see ``search.find_candidates``).
    With ``encoded_as`` (a shape of answer the world's codec writes: see
    engine.codec) an answer kept tree by tree comes encoded in that shape.
    """
    plain = not isinstance(request, ExtendedRequest)
    ext = extensions.extend(request)
    request = ext.base
    classes, traits = _named(request)
    with replica.current() as world:
        snap = world.snapshot
        known_classes = classes & world.names.classes
        known_traits = {t for t in traits if t in world.names.trait_rank}
        try:
            _check_root_traits(snap, request, known_traits)
            for k, group in enumerate(request.groups):
                try:
                    _check_group(snap, group, known_classes, known_traits, ext.can_split)
                except errors.BadRequest:
                    # Placement searches each group before it looks at the
                    # names of the next: an earlier group matching nothing
                    # on its own ends the request before this name is met.
                    if any(_alone_matches_nothing(snap, request, g)
                           for g in request.groups[:k]):
                        raise _NoCandidates from None
                    raise
        except _NoCandidates:
            if explain_limit is None:
                return EMPTY
            return CandidatesResult([], [], explain(snap, ext, tree_limit=explain_limit))
        codec = world.codec
        if (encoded_as is not None and codec is not None and plain and max_candidates < 0
                and explain_limit is None and candidate_rounds.serves(snap, request)):
            trait_rank, uuids = world.names.trait_rank, snap.uuids
            return CandidatesResult([], [], encoded=candidate_rounds.assemble(
                world, request, codec.encoder(encoded_as),
                lambda members: tuple(_summary(snap, uuids[m], trait_rank, ())
                                      for m in members),
                rng=(rng or random.Random()) if randomize else None))
        hits = snap.kept_hits()
        candidates = list(extensions.find_extended_candidates(
            snap, ext, max_candidates=max_candidates, strategy=strategy,
            randomize=randomize, rng=rng, packer=codec if packed else None))
        if snap.kept_hits() > hits:
            telemetry.metrics().kept_hits.inc(snap.kept_hits() - hits)
        explanation = None
        if explain_limit is not None:
            caps = [c for c in (request.limit, max_candidates) if c is not None and c >= 0]
            # Trees can only have been cut off when the answer is full.
            answered = ({c.anchor for c in candidates}
                        if caps and len(candidates) >= min(caps) else None)
            explanation = explain(snap, ext, tree_limit=explain_limit,
                                  answered_roots=answered)
        used, trees = search.provider_summary_trees(
            snap, candidates, nested_aware=request.nested_aware)
        if used is not None and _cut_in_nested_world(snap, request, candidates):
            used = _limited_summary_uuids(snap, ext, used, max_candidates, strategy)
        summaries, by_tree = _kept_summaries(world, used, trees)
        return CandidatesResult(candidates, summaries, explanation, by_tree, world.cache)


def _cut_in_nested_world(snap: LiveSnapshot, request: AllocationCandidatesRequest,
                         candidates: list) -> bool:
    return (not request.nested_aware and snap.has_nested and request.limit is not None
            and len(candidates) >= request.limit)


def _limited_summary_uuids(snap: LiveSnapshot, ext: ExtendedRequest, used: list[str],
                           max_candidates: int, strategy: str) -> list[str]:
    """Before 1.29, in a world with nested providers, the summaries of a
    limited answer: every provider of the returned candidates' trees that the
    answer without the limit uses.  (Upstream lists the providers its whole
    answer uses, then keeps those whose root is the root of a provider some
    returned candidate uses.)  In UUID order, as the other summaries before
    1.29."""
    index, root = snap.index, snap.root
    roots = {root[index[u]] for u in used}
    whole = dataclasses.replace(ext, base=dataclasses.replace(ext.base, limit=None))
    every: set[str] = set()
    for cand in extensions.find_extended_candidates(snap, whole, max_candidates=max_candidates,
                                           strategy=strategy):
        every.update(cand.allocations)
    return sorted(u for u in every if root[index[u]] in roots)


def _kept_summaries(world: World, used: list[str] | None,
                   trees: list[tuple[int, ...]] | None,
               ) -> tuple[list[ProviderSummary], list[tuple[ProviderSummary, ...]] | None]:
    """The summaries of the providers ``used``, or of the ``trees`` (then
    also tree by tree).  Each summary is kept until its provider changes,
    and each tree's until one of its providers does: a big answer from
    1.29 describes every provider of a few thousand trees, nearly all as
    they were for the last request."""
    snap = world.snapshot
    memo = world.memo("summary")
    known, revision_of, names_version = memo.get, snap.revision, world.names_version
    trait_rank = world.names.trait_rank

    def summary(uuid: str) -> ProviderSummary:
        revision = (uuid, revision_of(uuid), names_version)
        found = known(uuid)
        if found is None or found.revision != revision:
            found = memo[uuid] = _summary(snap, uuid, trait_rank, revision)
        return found

    if trees is None:
        return [summary(uuid) for uuid in used], None
    # Revisions are never reused, by any provider: equal revisions mean the
    # same providers, as they were.
    tree_memo = world.memo("summary-tree")
    held = tree_memo.get
    at, uuids = snap.position_revisions().__getitem__, snap.uuids
    summaries: list[ProviderSummary] = []
    by_tree = []
    for members in trees:
        stamp = (tuple(map(at, members)), names_version)
        first = uuids[members[0]]
        found = held(first)
        if found is None or found[0] != stamp:
            found = tree_memo[first] = (
                stamp, tuple([summary(uuid) for uuid in map(uuids.__getitem__, members)]))
        by_tree.append(found[1])
        summaries.extend(found[1])
    return summaries, by_tree


def _summary(snap: LiveSnapshot, uuid: str, trait_rank: Mapping[str, int],
             revision: tuple) -> ProviderSummary:
    return ProviderSummary(
        uuid=uuid,
        parent_uuid=snap.parent_uuid_of(uuid),
        root_uuid=snap.root_uuid(uuid),
        traits=tuple(sorted(snap.traits_of(uuid),
                            key=lambda name: (trait_rank.get(name, 1 << 62), name))),
        resources=dict(sorted(snap.resources_of(uuid).items())),
        revision=revision)
