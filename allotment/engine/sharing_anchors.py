"""Which trees each sharing provider serves.

A provider with ``MISC_SHARES_VIA_AGGREGATE`` serves (is "anchored by") the
tree of every provider that shares one of its aggregates, its own tree
included.  ``Snapshot.build`` works this out for every sharing provider at
once; a live snapshot works it out again, after a change, for the sharing
providers the change may concern.  Both keep ``anchors_of_sharing``
(sharing provider -> anchor roots) and ``sharing_by_anchor`` (root -> the
sharing providers of other trees serving it, in UUID order).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def anchors_of(s: int, root: Sequence[int], aggregates: Sequence[frozenset[str]],
               agg_members: Mapping[str, Iterable[int]]) -> frozenset[int]:
    """The roots of every provider in one of ``s``'s aggregates (``s`` included)."""
    return frozenset(root[q] for agg in aggregates[s] for q in agg_members.get(agg, ()))


def anchor_all(sharing: Iterable[int], root: Sequence[int],
               aggregates: Sequence[frozenset[str]],
               agg_members: Mapping[str, Iterable[int]],
               ) -> tuple[dict[int, frozenset[int]], dict[int, tuple[int, ...]]]:
    """``anchors_of_sharing`` and ``sharing_by_anchor`` of every provider in
    ``sharing`` (positions in UUID order, as a built snapshot has them)."""
    anchors_of_sharing: dict[int, frozenset[int]] = {}
    by_anchor: dict[int, list[int]] = {}
    for s in sharing:
        anchors = anchors_of(s, root, aggregates, agg_members)
        anchors_of_sharing[s] = anchors
        for r in anchors:
            if r != root[s]:
                by_anchor.setdefault(r, []).append(s)
    # Sharing providers were visited in position order, so each list is
    # already sorted.
    return anchors_of_sharing, {r: tuple(s) for r, s in by_anchor.items()}


def reanchor(snap: Any, aggs: set[str], sharing_before: set[int]) -> None:
    """Work out again, in place, which trees the sharing providers in
    ``aggs`` and those in ``sharing_before`` serve (a live snapshot's
    ``anchors_of_sharing``, ``sharing_by_anchor`` and ``sharing``)."""
    members = snap.agg_members
    affected = set(sharing_before)
    for a in aggs:
        for s in members.get(a, ()):
            if snap.is_sharing[s]:
                affected.add(s)
    uuids, served = snap.uuids, snap.sharing_by_anchor
    # Unlink every affected provider first: a dropped one must be gone
    # from every list before the others are placed by UUID.
    for s in affected:
        for r in snap.anchors_of_sharing.pop(s, ()):
            _unlink(served, r, s)
    for s in affected:
        if uuids[s] is None or not snap.is_sharing[s]:
            continue
        anchors = anchors_of(s, snap.root, snap.aggregates, members)
        snap.anchors_of_sharing[s] = anchors
        for r in anchors:
            if r != snap.root[s]:
                current = served.get(r, ())
                keyed = [uuids[x] for x in current]
                k = bisect_left(keyed, uuids[s])
                served[r] = (*current[:k], s, *current[k:])
    if affected:
        keep = [s for s in snap.sharing if s not in affected]
        keep.extend(s for s in affected if uuids[s] is not None and snap.is_sharing[s])
        snap.sharing = sorted(keep, key=uuids.__getitem__)


def _unlink(served: dict[int, tuple[int, ...]], r: int, s: int) -> None:
    current = served.get(r)
    if current is None or s not in current:
        return
    rest = tuple(x for x in current if x != s)
    if rest:
        served[r] = rest
    else:
        del served[r]
