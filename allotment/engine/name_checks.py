"""The checks Placement makes before it searches, in the order it makes them.

Unknown resource classes and traits are refused (:class:`UnknownName`, which
the service turns into a 400); where Placement gives up early with an empty
answer (no provider in a member_of aggregate, an unknown in_tree provider,
no room for some class at all, no root with the root traits), so do we,
before looking at the rest of the request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from allotment.engine import search
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.live import LiveSnapshot
from allotment.engine.plan import Group
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup


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
