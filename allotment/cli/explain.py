"""Why a candidates request fits nowhere, found by asking smaller requests.

The service answers "no candidates" without saying which constraint emptied
the answer; this narrows it down with ``limit=1`` probes: each group on its
own, then within a group its resource classes alone, then adding one filter
at a time. Each probe is an ordinary request, so it works on any Placement.
"""

from __future__ import annotations

import dataclasses

from allotment.client import CandidatesRequest, PlacementClient, RequestGroup


def _fits(client: PlacementClient, request: CandidatesRequest) -> bool:
    probe = dataclasses.replace(request, limit=1)
    return bool(client.allocation_candidates.get(probe).allocation_requests)


def _alone(suffix: str, group: RequestGroup, **wide) -> CandidatesRequest:
    if not suffix:
        return CandidatesRequest(unsuffixed=group, **wide)
    return CandidatesRequest(groups={suffix: group}, **wide)


def _group_reasons(client: PlacementClient, suffix: str, group: RequestGroup) -> list[str]:
    name = suffix or "(unsuffixed)"
    base = RequestGroup(resources={})
    for rc, amount in sorted(group.resources.items()):
        single = dataclasses.replace(base, resources={rc: amount})
        if not _fits(client, _alone(suffix, single)):
            return [f"group {name}: no provider has {amount} {rc} free"]
    steps = (("required traits", {"required": group.required, "forbidden": group.forbidden}),
             ("member_of", {"member_of": group.member_of,
                            "forbidden_aggregates": group.forbidden_aggregates}),
             ("in_tree", {"in_tree": group.in_tree}))
    current = RequestGroup(resources=group.resources)
    for label, fields in steps:
        if not any(fields.values()):
            continue
        current = dataclasses.replace(current, **fields)
        if not _fits(client, _alone(suffix, current)):
            return [f"group {name}: its resources fit, but not together with its {label}"]
    if len(group.resources) > 1:
        return [f"group {name}: each resource class fits somewhere, "
                "but no single tree (or provider, for a suffixed group) has them all"]
    return []


def explain(client: PlacementClient, request: CandidatesRequest) -> list[str]:
    """Reasons, most specific first; empty when the request does fit."""
    if _fits(client, request):
        return []
    reasons: list[str] = []
    groups = ([("", request.unsuffixed)] if request.unsuffixed else []) \
        + sorted(request.groups.items())
    for suffix, group in groups:
        if not group.resources:
            continue
        # Resourceless groups cannot be asked alone; they are judged with the rest.
        if not _fits(client, _alone(suffix, group)):
            reasons.extend(_group_reasons(client, suffix, group))
    if reasons:
        return reasons
    if request.root_required:
        relaxed = dataclasses.replace(request, root_required=[])
        if _fits(client, relaxed):
            return [f"root_required={','.join(request.root_required)} excludes every tree "
                    "that could serve the request"]
    if request.same_subtree:
        relaxed = dataclasses.replace(request, same_subtree=[])
        if _fits(client, relaxed):
            return ["every group fits, but not under one subtree as same_subtree asks"]
    if request.group_policy == "isolate":
        relaxed = dataclasses.replace(request, group_policy="none")
        if _fits(client, relaxed):
            return ["the groups fit only by sharing providers, which group_policy=isolate "
                    "forbids"]
    return ["every group fits on its own, but no tree satisfies all of them at once"]
