"""``allotment candidates``: granular allocation-candidate requests on the
command line, answered as "which host, which providers, how much"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from allotment.client import CandidatesRequest, PlacementClient, RequestGroup

_GROUP_KEYS = ("resources", "required", "member_of", "in_tree")


def parse_resources(text: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:2048`` (or ``VCPU=2``, as flavors write it)."""
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        sep_at = min((i for i in (item.find(":"), item.find("=")) if i >= 0), default=-1)
        rc, amount = (item[:sep_at], item[sep_at + 1:]) if sep_at >= 0 else (item, "")
        if sep_at < 0 or not amount.strip().isdigit():
            raise click.BadParameter(f"{item!r} is not RESOURCE_CLASS:AMOUNT")
        out[rc.strip()] = int(amount)
    return out


def make_group(resources: str | None, required: tuple[str, ...],
               member_of: tuple[str, ...], in_tree: str | None) -> RequestGroup:
    """A group from Placement's own query syntax: ``required`` values are
    ``A,!B`` or ``in:A,B``; ``member_of`` values ``uuid``, ``in:u1,u2`` or
    ``!in:u1,u2``."""
    wanted: list[Any] = []
    forbidden: list[str] = []
    for value in required:
        if value.startswith("in:"):
            wanted.append(frozenset(value[3:].split(",")))
            continue
        for name in filter(None, value.split(",")):
            (forbidden.append(name[1:]) if name.startswith("!") else wanted.append(name))
    aggregates: list[Any] = []
    not_in: list[str] = []
    for value in member_of:
        if value.startswith("!"):
            not_in.extend(value.removeprefix("!").removeprefix("in:").split(","))
        elif value.startswith("in:"):
            aggregates.append(frozenset(value[3:].split(",")))
        else:
            aggregates.append(value)
    try:
        return RequestGroup(resources=parse_resources(resources or ""), required=wanted,
                            forbidden=forbidden, member_of=aggregates,
                            forbidden_aggregates=not_in, in_tree=in_tree)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def parse_group(text: str) -> tuple[str, RequestGroup]:
    """``SUFFIX key=value ...`` with keys resources, required, member_of,
    in_tree (the last two may repeat), e.g. ``_GPU resources=VGPU:1
    required=CUSTOM_A100``."""
    words = text.split()
    if not words or "=" in words[0]:
        raise click.BadParameter(f"{text!r} must start with the group suffix")
    suffix, values = words[0], {k: [] for k in _GROUP_KEYS}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or key not in values:
            raise click.BadParameter(f"{word!r}: expected one of {', '.join(_GROUP_KEYS)}=...")
        values[key].append(value)
    group = make_group(",".join(values["resources"]) or None, tuple(values["required"]),
                       tuple(values["member_of"]), (values["in_tree"] or [None])[-1])
    return suffix, group


def build_request(*, resources: str | None, required: tuple[str, ...],
                  member_of: tuple[str, ...], in_tree: str | None, groups: tuple[str, ...],
                  group_policy: str | None, same_subtree: tuple[str, ...],
                  root_required: str | None, limit: int | None) -> CandidatesRequest:
    unsuffixed = None
    if resources or required or member_of or in_tree:
        unsuffixed = make_group(resources, required, member_of, in_tree)
    try:
        return CandidatesRequest(
            unsuffixed=unsuffixed, groups=dict(parse_group(g) for g in groups),
            group_policy=group_policy, limit=limit,
            same_subtree=[s.split(",") for s in same_subtree],
            root_required=[t for t in (root_required or "").split(",") if t])
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def provider_names(client: PlacementClient) -> Callable[[str], str]:
    """Provider UUID -> name: the first name asked for reads every
    provider's in one listing, so a long answer costs one request, not
    one per provider."""
    names: dict[str, str] = {}

    def name_of(uuid: str) -> str:
        if not names:
            names.update((p.uuid, p.name) for p in client.providers.list(version="1.14"))
        if uuid not in names:  # created since the listing
            names[uuid] = client.providers.get(uuid, version="1.14").name
        return names[uuid]
    return name_of


def describe(client: PlacementClient, request: CandidatesRequest) -> list[dict[str, Any]]:
    """Each candidate as ``{host, host_uuid, allocations: [{provider,
    provider_uuid, resources, usage, groups}]}``; ``usage`` is the used and
    capacity of each class the provider is asked for, from the answer's
    provider summaries.  Allocations are listed host tree first, then by
    name."""
    found = client.allocation_candidates.get(request)
    name_of = provider_names(client)

    out = []
    for candidate in found.allocation_requests:
        groups_of: dict[str, list[str]] = {}
        for suffix, providers in (candidate.get("mappings") or {}).items():
            for uuid in providers:
                groups_of.setdefault(uuid, []).append(suffix or "(unsuffixed)")
        providers_used = list(candidate["allocations"])
        for uuid in groups_of:
            if uuid not in providers_used:
                providers_used.append(uuid)  # resourceless groups' providers
        roots = {found.provider_summaries.get(u, {}).get("root_provider_uuid", u)
                 for u in providers_used}
        # Sharing providers are roots of their own: the host is the root
        # that is not a sharing provider's.
        host = sorted(roots, key=lambda u: (u not in _anchors(found, providers_used), u))[0]
        def root_of(uuid: str) -> str:
            return found.provider_summaries.get(uuid, {}).get("root_provider_uuid", uuid)

        providers_used.sort(key=lambda u: (root_of(u) != host, name_of(u), u))
        allocations = []
        for uuid in providers_used:
            resources = dict(sorted(
                candidate["allocations"].get(uuid, {}).get("resources", {}).items()))
            summary = found.provider_summaries.get(uuid, {}).get("resources", {})
            allocations.append({
                "provider": name_of(uuid), "provider_uuid": uuid, "resources": resources,
                "usage": {rc: {"used": summary[rc].get("used", 0),
                               "capacity": summary[rc].get("capacity", 0)}
                          for rc in resources if rc in summary},
                "groups": sorted(groups_of.get(uuid, [])),
            })
        entry = {"host": name_of(host), "host_uuid": host, "allocations": allocations}
        # What the what-if extensions add (docs/extensions/ignore-consumers.md,
        # preempt.md), as the service says it.
        for extra in ("displaces", "evicts"):
            if extra in candidate:
                entry[extra] = candidate[extra]
        out.append(entry)
    return out


def _anchors(found, providers: list[str]) -> set[str]:
    """Roots of the providers that do not share via aggregates."""
    out = set()
    for uuid in providers:
        summary = found.provider_summaries.get(uuid, {})
        if "MISC_SHARES_VIA_AGGREGATE" not in summary.get("traits", []):
            out.add(summary.get("root_provider_uuid", uuid))
    return out


def table_rows(candidates: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for number, candidate in enumerate(candidates, 1):
        for i, alloc in enumerate(candidate["allocations"]):
            usage = alloc.get("usage", {})
            rows.append([
                number if i == 0 else "", candidate["host"] if i == 0 else "",
                alloc["provider"],
                ", ".join(f"{rc}={n}" for rc, n in alloc["resources"].items()) or "-",
                ", ".join(f"{rc} {u['used']}/{u['capacity']}"
                          for rc, u in usage.items()),
                ", ".join(alloc["groups"]),
            ])
    return rows


def what_if_rows(candidates: list[dict[str, Any]]) -> list[list[Any]]:
    """Per candidate, the consumers it displaces or would evict."""
    rows = []
    for number, candidate in enumerate(candidates, 1):
        for kind, consumers in (("displaces", candidate.get("displaces") or []),
                                ("evicts", [v["consumer_uuid"] for v in
                                            candidate.get("evicts") or []])):
            for consumer in consumers:
                rows.append([number, candidate["host"], kind, consumer])
    return rows
