"""A request resolved against one snapshot: its groups and the per-anchor
rules that do not depend on how candidates are enumerated.

See :mod:`allotment.engine.search` for the semantics.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from allotment.engine.records import fits
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.engine.snapshot import Snapshot

NO_USAGE: Mapping[str, int] = {}

# In place of a usage in a search's ``(usage, chosen)`` result: ``chosen``
# is a finished Candidate, which only its anchor can reach.
READY = object()


# Not frozen: a frozen dataclass's __init__ costs several times a plain one,
# and a big answer makes one of these per host.
@dataclass(slots=True)
class Candidate:
    """One way to satisfy the whole request.

    ``allocations`` maps provider UUID to ``{resource class: amount}``;
    ``mappings`` maps each group suffix (``""`` for the unsuffixed group) to
    the UUIDs of the providers that satisfied it.  Providers that satisfy only
    resourceless groups appear in ``mappings`` but not in ``allocations``.
    ``anchor`` is the root UUID of the tree the candidate was built around.
    ``allocations`` and ``mappings`` are plain dicts (of dicts and of
    lists), which renderers may pass on as they are.  Treat everything as
    read-only: candidates may share these mappings.
    """

    allocations: Mapping[str, Mapping[str, int]]
    mappings: Mapping[str, list[str]]
    anchor: str
    # Whether this very object is handed out again in later answers while
    # its tree stays as it is (engine.kept, unsuffixed.lonely_search):
    # renderers may keep what they make of it (world.cache), not of a
    # candidate made for one answer.
    reused: bool = field(default=False, compare=False)


class Packer(Protocol):
    """What makes a tree's candidates into the bytes kept for them
    (engine.packed): the caller's, which alone knows what they say."""

    def pack(self, candidates: Sequence[Candidate]) -> bytes:
        """``candidates``, in their order, as one string of bytes."""


# ---------------------------------------------------------------------------
# Request compilation


class Group:
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

    def __init__(self, snapshot: Snapshot, group: SearchGroup) -> None:
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
            usage = snapshot.used.get(snapshot.uuids[p], NO_USAGE)
            for rc, amount in self.resources:
                lim = inventories.get(rc)
                if lim is None or not fits(lim, usage.get(rc, 0), amount):
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


class Plan:
    """Everything about a request that does not depend on the anchor."""

    def __init__(self, snapshot: Snapshot, request: AllocationCandidatesRequest,
                 groups: list[Group]) -> None:
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
        # The request is one unsuffixed group with resources: see lonely_search.
        self.only_unsuffixed = (self.unsuffixed is not None and not self.suffixed
                                and not self.unsuffixed.resourceless)
        # What such a candidate allocates, shared by every one of them.
        self.lonely_resources = (dict(self.unsuffixed.resources)
                                 if self.only_unsuffixed else {})
        # The anchor-at-a-time shortcut for such requests (unsuffixed.lonely_search).
        self.lonely: Callable[[int], object] | None = None
        # What a changing snapshot keeps of this request's answers, per kind
        # of search (engine.kept); looked up on first use.
        self.kept: dict = {}
        # What packs a tree's whole answer, where the caller takes it as one
        # packed item (engine.packed): it wants every candidate of every
        # tree, a tree at a time.  None: nothing is packed or handed out packed.
        self.packer: Packer | None = None

    @classmethod
    def compile(cls, snapshot: Snapshot,
                request: AllocationCandidatesRequest) -> Plan | None:
        groups = [Group(snapshot, g) for g in request.groups]
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
        for g in self.groups:
            here = _anchors_of_members(snap, g.members)
            if here is not None:
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


# A group's member_of narrows the anchors walked only when its members are
# at most this many per root (see _anchors_of_members).
MEMBERS_WALKED_PER_ROOT = 0.25


def _anchors_of_members(snap: Snapshot, members: frozenset[int] | None) -> set[int] | None:
    """The only anchors a group limited to ``members`` (member_of) can be
    served from: the trees of its members and the trees its sharing members
    serve.  None when the group is not limited, or when its members are so
    many that walking them would cost more than the anchors they rule out."""
    if members is None or len(members) > len(snap.roots) * MEMBERS_WALKED_PER_ROOT:
        return None
    root, is_sharing, served = snap.root, snap.is_sharing, snap.anchors_of_sharing
    here = set()
    for p in members:
        here.add(root[p])
        if is_sharing[p]:
            here |= served.get(p, ())
    return here


def may_repeat(plan: Plan, r: int) -> bool:
    """Whether a candidate anchored at ``r`` could also be reached from
    another anchor: only when a sharing provider is in or serves ``r``'s
    tree."""
    snap = plan.snapshot
    return r in snap.sharing_by_anchor or any(
        map(snap.is_sharing.__getitem__, snap.tree_members(r)))


def portable(plan: Plan, r: int, chosen: list) -> bool:
    """Whether every provider of an assignment anchored at ``r`` could be
    reached as a sharing provider from elsewhere (so that another anchor may
    find the same candidate); check :func:`may_repeat` first, it is cheaper."""
    snap = plan.snapshot
    root, is_sharing = snap.root, snap.is_sharing
    return all(root[p] != r or is_sharing[p] for picks in chosen for p in picks)


def build_candidate(plan: Plan, r: int, usage: dict, chosen: list) -> Candidate:
    """The candidate of an assignment anchored at ``r``: ``usage`` maps
    (provider, class) to the amount; ``chosen`` lists each group's
    providers, in the plan's group order."""
    uuids = plan.snapshot.uuids
    # Providers in UUID order (positions need not follow UUIDs, see
    # engine.live), classes by name within each.
    allocations: dict[str, dict[str, int]] = {}
    for uuid, rc, amount in sorted([(uuids[p], rc, amount)
                                    for (p, rc), amount in usage.items()]):
        held = allocations.get(uuid)
        if held is None:
            allocations[uuid] = {rc: amount}
        else:
            held[rc] = amount
    mappings = {}
    for g, picks in zip(plan.groups, chosen, strict=True):
        mappings[g.suffix] = ([uuids[picks[0]]] if len(picks) == 1
                              else sorted({uuids[p] for p in picks}))
    return Candidate(allocations, mappings, uuids[r])
