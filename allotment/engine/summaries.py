"""What ``provider_summaries`` says about the providers around an answer,
kept from one request to the next until the providers change."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from allotment.engine import extensions
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.live import LiveSnapshot
from allotment.engine.request import AllocationCandidatesRequest


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


def cut_in_nested_world(snap: LiveSnapshot, request: AllocationCandidatesRequest,
                        candidates: list) -> bool:
    return (not request.nested_aware and snap.has_nested and request.limit is not None
            and len(candidates) >= request.limit)


def limited_summary_uuids(snap: LiveSnapshot, ext: ExtendedRequest, used: list[str],
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


def kept_summaries(snap: LiveSnapshot, memo: Callable[[Hashable], dict],
                   trait_rank: Mapping[str, int], names_version: int,
                   used: list[str] | None, trees: list[tuple[int, ...]] | None,
                   ) -> tuple[list[ProviderSummary], list[tuple[ProviderSummary, ...]] | None]:
    """The summaries of the providers ``used``, or of the ``trees`` (then
    also tree by tree).  Each summary is kept (in ``memo``'s sections) until
    its provider changes, and each tree's until one of its providers does: a
    big answer from 1.29 describes every provider of a few thousand trees,
    nearly all as they were for the last request.  ``trait_rank`` and
    ``names_version``: the world's trait order, and its version."""
    kept = memo("summary")
    known, revision_of = kept.get, snap.revision

    def summary_of(uuid: str) -> ProviderSummary:
        revision = (uuid, revision_of(uuid), names_version)
        found = known(uuid)
        if found is None or found.revision != revision:
            found = kept[uuid] = summary(snap, uuid, trait_rank, revision)
        return found

    if trees is None:
        return [summary_of(uuid) for uuid in used], None
    # Revisions are never reused, by any provider: equal revisions mean the
    # same providers, as they were.
    tree_memo = memo("summary-tree")
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
                stamp, tuple([summary_of(uuid) for uuid in map(uuids.__getitem__, members)]))
        by_tree.append(found[1])
        summaries.extend(found[1])
    return summaries, by_tree


def summary(snap: LiveSnapshot, uuid: str, trait_rank: Mapping[str, int],
            revision: tuple) -> ProviderSummary:
    return ProviderSummary(
        uuid=uuid,
        parent_uuid=snap.parent_uuid_of(uuid),
        root_uuid=snap.root_uuid(uuid),
        traits=tuple(sorted(snap.traits_of(uuid),
                            key=lambda name: (trait_rank.get(name, 1 << 62), name))),
        resources=dict(sorted(snap.resources_of(uuid).items())),
        revision=revision)
