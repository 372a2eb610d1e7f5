"""Why a tree yields no allocation candidate.

For each tree (in the order the search visits roots) :func:`explain` first
asks the search itself whether the tree anchors a candidate: that is the
only judge, so a tree is reported as failing exactly when it yields none.
Only for failing trees does it then look for the first reason, checking in
this order:

1. the root: ``root_required`` / forbidden root traits, ``root_member_of``;
2. each request group alone, in request order, narrowing the providers that
   could serve it stage by stage -- inventory of each class, ``in_tree``,
   ``member_of``, required and forbidden traits, ``min_unit`` / ``max_unit``
   / ``step_size``, free capacity -- and reporting the first stage that
   leaves none (with the numbers of the most promising provider);
3. the groups together: the search is re-run on this one tree with one
   constraint lifted at a time (each ``same_subtree``, each anti-affinity,
   isolation, the unsuffixed group's traits); the first whose removal makes
   the tree yield is the reason;
4. otherwise the amounts of several groups landing on the same providers
   exceed what they have (``capacity_combined``).

The work is bounded: trees are examined until ``tree_limit`` failing ones
have been explained, and only one tree is ever searched at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from allotment.engine import extensions
from allotment.engine import plan as plan_mod
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup
from allotment.engine.snapshot import CAPACITY, MAX_UNIT, MIN_UNIT, STEP_SIZE, Snapshot

_NO_USAGE: Mapping[str, int] = {}


@dataclass(frozen=True)
class TreeReason:
    """Why the tree rooted at ``root`` (a provider UUID) yields nothing.

    ``group`` is the suffix of the group that failed (``""`` for the
    unsuffixed one), None for reasons about the request as a whole.
    ``details`` holds the reason's numbers and names (see docs/explain.md).
    """

    root: str
    reason: str
    group: str | None = None
    details: Mapping[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict:
        body: dict = {"root_provider_uuid": self.root, "reason": self.reason}
        if self.group is not None:
            body["group"] = self.group
        body.update(self.details)
        return body


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` found over the trees it examined."""

    trees_examined: int
    trees_with_candidates: int
    # Trees that yield candidates, none of which made it into the answer.
    trees_cut_by_limit: int
    failing: tuple[TreeReason, ...]
    # Whether trees were left unexamined because tree_limit was reached.
    truncated: bool
    # Sharing providers no group of the request could use (see
    # _sharing_reason); ``root`` holds the sharing provider's UUID.
    sharing: tuple[TreeReason, ...] = ()

    def as_dict(self) -> dict:
        return {
            "trees_examined": self.trees_examined,
            "trees_with_candidates": self.trees_with_candidates,
            "trees_cut_by_limit": self.trees_cut_by_limit,
            "trees_without_candidates": len(self.failing),
            "truncated": self.truncated,
            "trees": [t.as_dict() for t in self.failing],
            "sharing_providers": [_sharing_dict(t) for t in self.sharing],
        }


def _sharing_dict(reason: TreeReason) -> dict:
    body = reason.as_dict()
    body["provider_uuid"] = body.pop("root_provider_uuid")
    return body


def explain(
    snapshot: Snapshot,
    request: AllocationCandidatesRequest | ExtendedRequest,
    *,
    tree_limit: int = 50,
    answered_roots: Iterable[str] | None = None,
) -> Explanation:
    """Explain, for up to ``tree_limit`` trees, why they yield no candidate.

    ``answered_roots`` are the anchors of the candidates actually returned,
    to be given when ``limit`` cut the answer short: trees that yield but
    are not among them are counted as cut off by the limit.
    """
    ext = extensions.extend(request)
    plan = extensions.compile_plan(snapshot, ext)
    answered = None if answered_roots is None else set(answered_roots)
    examined = yielding = cut = 0
    failing: list[TreeReason] = []
    truncated = False
    # Resolving a group's aggregates and in_tree is the same for every tree.
    resolved = [plan_mod.Group(snapshot, g) for g in ext.base.groups]
    for r in snapshot.roots:
        if len(failing) >= tree_limit:
            truncated = True
            break
        examined += 1
        if extensions.tree_yields(plan, r):
            yielding += 1
            if answered is not None and snapshot.uuids[r] not in answered:
                cut += 1
            continue
        failing.append(_diagnose(snapshot, ext, resolved, r))
    sharing = []
    for p in snapshot.sharing:
        found = _sharing_reason(snapshot, ext, resolved, p)
        if found is None:
            continue
        if len(sharing) >= tree_limit:
            truncated = True
            break
        sharing.append(found)
    return Explanation(examined, yielding, cut, tuple(failing), truncated, tuple(sharing))


def _sharing_reason(snap: Snapshot, ext: ExtendedRequest, resolved: list[plan_mod.Group],
                    s: int) -> TreeReason | None:
    """Why no group of the request can use sharing provider ``s``, or None.

    Only groups asking for a class ``s`` has count; a provider none of them
    asks anything of is not reported.  Each is checked on ``s`` alone, with
    the stages used for trees; the reason given is the first group's.
    """
    inventory = snap.inventory[s]
    first: _Found | None = None
    for g, group in zip(resolved, ext.base.groups, strict=True):
        wanted = sorted((rc, a) for rc, a in group.resources.items() if rc in inventory)
        if not wanted:
            continue
        try:
            if not (snap.anchors_of_sharing.get(s, frozenset()) - {snap.root[s]}):
                raise _Found("serves_no_tree", group.suffix)
            if group.suffix:
                _check_suffixed_on(snap, g, group, [s])
            else:
                if g.tree_root is not None:
                    raise _Found("in_tree", "", in_tree=group.in_tree)
                found = _check_filters(snap, g, group, [s], lambda p, m: p in m)
                for rc, amount in wanted:
                    _unit_and_capacity(snap, found, "", rc, amount)
            return None
        except _Found as reason:
            first = first or reason
    if first is None:
        return None
    return TreeReason(snap.uuids[s], first.reason, first.group, first.details)


# ---------------------------------------------------------------------------
# Diagnosis of one failing tree


class _Found(Exception):
    def __init__(self, reason: str, group: str | None = None, **details: object) -> None:
        super().__init__(reason)
        self.reason, self.group, self.details = reason, group, details


def _diagnose(snap: Snapshot, ext: ExtendedRequest, resolved: list[plan_mod.Group],
              r: int) -> TreeReason:
    try:
        _check_root(snap, ext, r)
        for g, group in zip(resolved, ext.base.groups, strict=True):
            if group.suffix:
                _check_suffixed(snap, g, group, r)
            else:
                _check_unsuffixed(snap, g, group, r, ext.can_split)
        _check_together(snap, ext, r)
    except _Found as found:
        return TreeReason(snap.uuids[r], found.reason, found.group, found.details)
    return TreeReason(snap.uuids[r], "capacity_combined", None, {})


def _check_root(snap: Snapshot, ext: ExtendedRequest, r: int) -> None:
    traits = snap.traits[r]
    for t in sorted(ext.base.root_required - traits):
        raise _Found("root_required", trait=t)
    for t in sorted(ext.base.root_forbidden & traits):
        raise _Found("root_forbidden", trait=t)
    aggs = snap.aggregates[r]
    for any_of in ext.root_member_of:
        if any_of.isdisjoint(aggs):
            raise _Found("root_member_of", aggregates=sorted(any_of))
    bad = ext.forbidden_root_aggs & aggs
    if bad:
        raise _Found("root_member_of", forbidden_aggregates=sorted(bad))


def _sources(snap: Snapshot, r: int, with_sharing: bool = True) -> list[int]:
    out = list(snap.tree_members(r))
    if with_sharing:
        out.extend(snap.sharing_by_anchor.get(r, ()))
    return out


def _free(snap: Snapshot, p: int, rc: str) -> int:
    lim = snap.inventory[p][rc]
    return lim[CAPACITY] - snap.used.get(snap.uuids[p], _NO_USAGE).get(rc, 0)


def _narrow(found: list[int], keep: Callable[[int], bool], reason: str, group: str,
            details: Callable[[], dict] | None = None, **static: object) -> list[int]:
    """The providers of ``found`` that ``keep``; the reason if none is left.

    ``details`` is called only then: most trees pass most stages, and
    explaining every tree of a big cloud must stay cheap.
    """
    kept = [p for p in found if keep(p)]
    if not kept:
        raise _Found(reason, group, **(details() if details else static))
    return kept


def _unit_and_capacity(snap: Snapshot, found: list[int], suffix: str,
                       rc: str, amount: int) -> list[int]:
    inv = snap.inventory

    def limits(name: str, pos: int) -> Callable[[], dict]:
        p = min(found, key=snap.uuids.__getitem__)
        return lambda: {"resource_class": rc, "requested": amount,
                        "provider_uuid": snap.uuids[p], name: inv[p][rc][pos]}

    found = _narrow(found, lambda p: inv[p][rc][MIN_UNIT] <= amount, "min_unit",
                    suffix, limits("min_unit", MIN_UNIT))
    found = _narrow(found, lambda p: amount <= inv[p][rc][MAX_UNIT], "max_unit",
                    suffix, limits("max_unit", MAX_UNIT))
    found = _narrow(found, lambda p: amount % inv[p][rc][STEP_SIZE] == 0, "step_size",
                    suffix, limits("step_size", STEP_SIZE))

    def most_free() -> dict:
        best = min(found, key=lambda p: (-_free(snap, p, rc), snap.uuids[p]))
        return {"resource_class": rc, "requested": amount,
                "provider_uuid": snap.uuids[best], "capacity": inv[best][rc][CAPACITY],
                "used": snap.used.get(snap.uuids[best], _NO_USAGE).get(rc, 0)}

    return _narrow(found, lambda p: _free(snap, p, rc) >= amount, "capacity", suffix,
                   most_free)


def _check_filters(snap: Snapshot, g: plan_mod.Group, group: SearchGroup,
                   found: list[int], member_test) -> list[int]:
    s = group.suffix
    for any_of in group.member_of:
        agg = snap.agg_members
        members = set().union(*(agg.get(a, ()) for a in any_of))
        found = _narrow(found, lambda p, m=members: member_test(p, m), "member_of", s,
                        lambda a=any_of: {"aggregates": sorted(a)})
    if g.banned:
        found = _narrow(found, lambda p: not member_test(p, g.banned), "member_of", s,
                        lambda: {"forbidden_aggregates": sorted(group.forbidden_aggs)})
    traits = snap.traits
    if group.suffix:
        for any_of in group.required_traits:
            found = _narrow(found, lambda p, t=any_of: not t.isdisjoint(traits[p]),
                            "required_trait", s, lambda t=any_of: {"traits": sorted(t)})
    if g.forbidden:
        found = _narrow(found, lambda p: g.forbidden.isdisjoint(traits[p]),
                        "forbidden_trait", s, lambda: {"traits": sorted(g.forbidden)})
    return found


def _check_suffixed(snap: Snapshot, g: plan_mod.Group, group: SearchGroup, r: int) -> None:
    s = group.suffix
    if g.never_matches() and g.resourceless:
        raise _Found("unmatchable", s)
    _check_suffixed_on(snap, g, group, _sources(snap, r))


def _check_suffixed_on(snap: Snapshot, g: plan_mod.Group, group: SearchGroup,
                       found: list[int]) -> None:
    s = group.suffix
    for rc in sorted(group.resources):
        found = _narrow(found, lambda p, rc=rc: rc in snap.inventory[p], "no_inventory", s,
                        resource_class=rc)
    if g.tree_root is not None and not g.resourceless:
        found = _narrow(found, lambda p: snap.root[p] == g.tree_root, "in_tree", s,
                        in_tree=group.in_tree)
    found = _check_filters(snap, g, group, found, lambda p, m: p in m)
    for rc, amount in sorted(group.resources.items()):
        found = _unit_and_capacity(snap, found, s, rc, amount)


def _check_unsuffixed(snap: Snapshot, g: plan_mod.Group, group: SearchGroup, r: int,
                      can_split: frozenset[str] = frozenset()) -> None:
    pinned = g.tree_root is not None
    if r in g.banned:
        # A forbidden aggregate on the root rules out the whole tree, and
        # with it the sharing providers it would use.
        raise _Found("member_of", "", forbidden_aggregates=sorted(group.forbidden_aggs))
    usable: set[int] = set()
    for rc, amount in sorted(group.resources.items()):
        found = _sources(snap, r, with_sharing=not pinned)
        found = _narrow(found, lambda p, rc=rc: rc in snap.inventory[p], "no_inventory", "",
                        resource_class=rc)
        if pinned:
            found = _narrow(found, lambda p: g.tree_root == r, "in_tree", "",
                            in_tree=group.in_tree)

        def member(p: int, m: Iterable[int]) -> bool:
            # An aggregate on the root covers its whole tree, not sharing ones.
            return p in m or (snap.root[p] == r and r in m)

        found = _check_filters(snap, g, group, found, member)
        if rc in can_split:
            usable.update(_split_capacity(snap, found, r, rc, amount))
            continue
        usable.update(_unit_and_capacity(snap, found, "", rc, amount))
    have = set().union(*(snap.traits[p] for p in usable)) if usable else set()
    for any_of in group.required_traits:
        if any_of.isdisjoint(have):
            raise _Found("required_trait", "", traits=sorted(any_of))


def _split_capacity(snap: Snapshot, found: list[int], r: int, rc: str,
                    amount: int) -> list[int]:
    """A class that may be divided fails alone only when no provider can
    take it whole and the tree's providers together cannot either."""
    inv = snap.inventory
    room = [p for p in found
            if inv[p][rc][MIN_UNIT] <= amount <= inv[p][rc][MAX_UNIT]
            and amount % inv[p][rc][STEP_SIZE] == 0 and _free(snap, p, rc) >= amount]
    if room:
        return room
    home = [p for p in found if snap.root[p] == r]
    parts = []
    remaining = amount
    for p in sorted(home, key=lambda p: (-_free(snap, p, rc), snap.uuids[p])):
        lim = inv[p][rc]
        most = min(remaining, _free(snap, p, rc), lim[MAX_UNIT])
        take = most - most % lim[STEP_SIZE] if most > 0 else 0
        if take > 0 and take >= lim[MIN_UNIT]:
            parts.append(p)
            remaining -= take
            if not remaining:
                return parts
    raise _Found("split_capacity", "", resource_class=rc, requested=amount,
                 free_in_tree=sum(max(0, _free(snap, p, rc)) for p in home))


def _yields_without(snap: Snapshot, ext: ExtendedRequest, r: int, **changes) -> bool:
    base_changes = {k: v for k, v in changes.items()
                    if k in ("same_subtrees", "group_policy", "groups")}
    ext_changes = {k: v for k, v in changes.items() if k not in base_changes}
    base = dataclasses.replace(ext.base, **base_changes)
    relaxed = dataclasses.replace(ext, base=base, **ext_changes)
    return extensions.tree_yields(extensions.compile_plan(snap, relaxed), r)


def _check_together(snap: Snapshot, ext: ExtendedRequest, r: int) -> None:
    base = ext.base
    for i, entry in enumerate(base.same_subtrees):
        if len(entry) > 1:
            rest = base.same_subtrees[:i] + base.same_subtrees[i + 1:]
            if _yields_without(snap, ext, r, same_subtrees=rest):
                raise _Found("same_subtree", same_subtree=sorted(entry))
    for i, (positive, negative) in enumerate(ext.anti_affinity):
        rest = ext.anti_affinity[:i] + ext.anti_affinity[i + 1:]
        if _yields_without(snap, ext, r, anti_affinity=rest):
            raise _Found("same_subtree_anti_affinity", same_subtree=sorted(positive)
                         + [f"!{s}" for s in sorted(negative)])
    if base.group_policy == "isolate" and _yields_without(snap, ext, r, group_policy="none"):
        raise _Found("isolation", group_policy="isolate")
    for i, entry in enumerate(ext.isolate):
        rest = ext.isolate[:i] + ext.isolate[i + 1:]
        if _yields_without(snap, ext, r, isolate=rest):
            raise _Found("isolation", isolate=sorted(entry))
    unsuffixed = base.group("")
    if unsuffixed is not None and unsuffixed.required_traits:
        groups = tuple(dataclasses.replace(g, required_traits=()) if not g.suffix else g
                       for g in base.groups)
        if _yields_without(snap, ext, r, groups=groups):
            raise _Found("required_trait_combined", "",
                         traits=[sorted(t) for t in unsuffixed.required_traits])
