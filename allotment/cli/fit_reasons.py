"""Why a candidates request fits nowhere.

``server_explanation`` asks allotment's explain extension, which names for
every host the first thing that ruled it out.  ``explain`` works with any
Placement: it narrows the cause down by asking smaller requests.

Upstream answers "no candidates" without saying which constraint emptied
the answer; ``explain`` narrows it down with ``limit=1`` probes: each group on its
own, then within a group its resource classes alone, then adding one filter
at a time. Each probe is an ordinary request, so it works on any Placement.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

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


# What each reason of the explain extension means, with the fields that
# give its numbers (docs/extensions/explain.md).
_DETAIL_FIELDS = ("resource_class", "requested", "capacity", "used", "free_in_tree",
                  "max_unit", "min_unit", "step_size", "trait", "traits", "aggregates",
                  "forbidden_aggregates", "in_tree", "same_subtree", "group_policy",
                  "isolate")


def _reason_text(tree: dict[str, Any]) -> str:
    group = tree.get("group")
    where = f"group {group or '(unsuffixed)'}: " if group is not None else ""
    details = ", ".join(f"{k}={tree[k]}" for k in _DETAIL_FIELDS if k in tree)
    return f"{where}{tree['reason']}" + (f" ({details})" if details else "")


def server_explanation(client: PlacementClient, request: CandidatesRequest,
                       names: Callable[[str], str],
                       explain_limit: int | None = None) -> list[dict[str, str]]:
    """Per host, why it yields no candidate, as allotment's explain extension
    says (one request; a service without the extension refuses it)."""
    return server_report(client, request, names, explain_limit)["explanation"]


COUNTERS = ("trees_examined", "trees_with_candidates", "trees_cut_by_limit",
            "trees_without_candidates", "truncated")


def _shortfall(tree: dict[str, Any]) -> float:
    """How far a host is from fitting: the amount missing for a capacity
    reason (near misses first); anything else after every such host."""
    if {"requested", "capacity", "used"} <= tree.keys():
        return tree["used"] + tree["requested"] - tree["capacity"]
    return float("inf")


def server_report(client: PlacementClient, request: CandidatesRequest,
                  names: Callable[[str], str],
                  explain_limit: int | None = None) -> dict[str, Any]:
    """The explain extension's answer for people: ``counters`` (what the
    server examined), ``reasons`` (how many hosts each reason ruled out)
    and ``explanation`` (per host, near misses first: the hosts that miss
    the least of a class)."""
    asked = dataclasses.replace(request, explain=True, explain_limit=explain_limit)
    explanation = client.allocation_candidates.get(asked).explanation or {}
    trees = sorted(explanation.get("trees", []), key=_shortfall)
    reasons: dict[str, int] = {}
    for tree in [*trees, *explanation.get("sharing_providers", [])]:
        reasons[tree["reason"]] = reasons.get(tree["reason"], 0) + 1
    rows = [{"host": names(tree["root_provider_uuid"]),
             "host_uuid": tree["root_provider_uuid"], "why": _reason_text(tree)}
            for tree in trees]
    for sharing in explanation.get("sharing_providers", []):
        uuid = sharing["provider_uuid"]
        rows.append({"host": f"{names(uuid)} (sharing)", "host_uuid": uuid,
                     "why": _reason_text(sharing)})
    return {"counters": {k: explanation[k] for k in COUNTERS if k in explanation},
            "reasons": dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
            "explanation": rows}
