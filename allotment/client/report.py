"""Read-only reports for operators: one host's tree with its usage, and
capacity and usage per host.  Shared by the ``allotment`` CLI and the web
view, so both show the same numbers the API gives.
"""

from __future__ import annotations

import contextlib
import gc
import uuid as uuid_mod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allotment.client.exceptions import ClientError
from allotment.client.inventories import capacity
from allotment.client.provider_details import (
    LISTING_VERSION,
    DetailedProvider,
    list_detailed,
    list_records,
)
from allotment.client.providers import Provider, parents_first

if TYPE_CHECKING:
    from allotment.client._client import PlacementClient

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass
class Amount:
    """Capacity and usage of one resource class."""

    capacity: int = 0
    used: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.capacity if self.capacity else 0.0


@dataclass
class ProviderReport:
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    depth: int
    inventories: dict[str, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Amount] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)

    @property
    def sharing(self) -> bool:
        return SHARING_TRAIT in self.traits

    def as_dict(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid, "name": self.name, "generation": self.generation,
            "parent_provider_uuid": self.parent_provider_uuid, "depth": self.depth,
            "inventories": self.inventories,
            "usage": {rc: {"capacity": a.capacity, "used": a.used}
                      for rc, a in self.usage.items()},
            "traits": self.traits, "aggregates": self.aggregates,
        }


@dataclass
class TreeReport:
    """A host's tree, parents first, and the sharing providers serving it."""

    providers: list[ProviderReport]
    sharing: list[ProviderReport]

    @property
    def root(self) -> ProviderReport:
        return self.providers[0]

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root.uuid,
                "providers": [p.as_dict() for p in self.providers],
                "sharing_providers": [p.as_dict() for p in self.sharing]}


@dataclass
class HostSummary:
    """One tree (host): capacity and usage summed per resource class."""

    uuid: str
    name: str
    providers: int
    usage: dict[str, Amount] = field(default_factory=dict)
    # A sharing provider (MISC_SHARES_VIA_AGGREGATE) at the root: a pool,
    # not a compute host.
    sharing: bool = False
    # Of every provider of the tree.
    aggregates: set[str] = field(default_factory=set)
    traits: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "name": self.name, "providers": self.providers,
                "sharing": self.sharing, "aggregates": sorted(self.aggregates),
                "usage": {rc: {"capacity": a.capacity, "used": a.used}
                          for rc, a in self.usage.items()}}


def _is_uuid(value: str) -> bool:
    try:
        uuid_mod.UUID(value)
    except ValueError:
        return False
    return True


def find_provider(client: PlacementClient, host: str) -> Provider:
    """The provider named ``host``, or with that uuid."""
    if _is_uuid(host):
        found = client.providers.find(host, version=LISTING_VERSION)
        if found is not None:
            return found
    by_name = client.providers.list(name=host, version=LISTING_VERSION)
    if not by_name:
        raise ClientError(f"No resource provider named or with uuid {host!r}")
    return by_name[0]


def _report_of(detail: DetailedProvider, depth: int = 0) -> ProviderReport:
    provider = detail.provider
    report = ProviderReport(
        uuid=provider.uuid, name=provider.name, generation=provider.generation,
        parent_provider_uuid=provider.parent_provider_uuid, depth=depth,
        inventories=dict(sorted(detail.inventories.items())),
        traits=list(detail.traits), aggregates=list(detail.aggregates))
    for rc, record in report.inventories.items():
        report.usage[rc] = Amount(capacity(record), detail.usages.get(rc, 0))
    return report


def tree_report(client: PlacementClient, host: str) -> TreeReport:
    """The whole tree containing ``host`` (a name or uuid of any of its
    providers), with the sharing providers in any of its aggregates: two
    listings with their details (against allotment)."""
    start = find_provider(client, host)
    details, _ = list_detailed(client, [("in_tree", start.uuid)])
    by_uuid = {d.provider.uuid: d for d in details}
    depth: dict[str, int] = {}
    reports = []
    for provider in parents_first(d.provider for d in details):
        depth[provider.uuid] = (depth.get(provider.parent_provider_uuid, -1) + 1
                                if provider.parent_provider_uuid else 0)
        reports.append(_report_of(by_uuid[provider.uuid], depth[provider.uuid]))
    in_tree = {p.uuid for p in reports}
    aggregates = sorted({agg for p in reports for agg in p.aggregates})
    sharing: list[ProviderReport] = []
    if aggregates:
        found, _ = list_detailed(client, [("member_of", "in:" + ",".join(aggregates)),
                                          ("required", SHARING_TRAIT)])
        sharing = [_report_of(d) for d in sorted(found, key=lambda d: d.provider.name)
                   if d.provider.uuid not in in_tree]
    return TreeReport(reports, sharing)


def served_trees(client: PlacementClient, sharing: ProviderReport) -> list[ProviderReport]:
    """The roots of the trees a sharing provider serves (the trees with a
    provider in one of its aggregates), by name."""
    if not sharing.aggregates:
        return []
    found, _ = list_detailed(client, [("member_of", "in:" + ",".join(sharing.aggregates))])
    roots = {d.provider.root_provider_uuid or d.provider.uuid for d in found}
    roots.discard(sharing.uuid)
    listed = {d.provider.uuid: d for d in found}
    out = []
    for uuid in roots:
        detail = listed.get(uuid)
        if detail is None:
            more, _ = list_detailed(client, [("uuid", uuid)])
            detail = more[0] if more else None
        if detail is not None:
            out.append(_report_of(detail))
    return sorted(out, key=lambda r: r.name)


@dataclass
class HostList:
    """Hosts (trees) with their totals, per aggregate and for the cloud."""

    hosts: list[HostSummary]
    total: dict[str, Amount]
    by_aggregate: dict[str, dict[str, Amount]]
    requests: int = 0

    def as_dict(self) -> dict[str, Any]:
        def amounts(usage: dict[str, Amount]) -> dict[str, dict[str, int]]:
            return {rc: {"capacity": a.capacity, "used": a.used}
                    for rc, a in sorted(usage.items())}

        return {"hosts": [h.as_dict() for h in self.hosts], "total": amounts(self.total),
                "by_aggregate": {agg: amounts(u) for agg, u in sorted(self.by_aggregate.items())}}


def _add(into: dict[str, Amount], usage: dict[str, Amount]) -> None:
    for rc, a in usage.items():
        total = into.setdefault(rc, Amount())
        total.capacity += a.capacity
        total.used += a.used


def _busiest(host: HostSummary, resource_class: str | None) -> float:
    if resource_class is not None:
        amount = host.usage.get(resource_class)
        return amount.percent if amount else 0.0
    return max((a.percent for a in host.usage.values()), default=0.0)


SORTS = ("name", "usage")


@contextlib.contextmanager
def _bulk() -> Iterator[None]:
    """Without the cyclic garbage collector: reading a large cloud's listing
    makes hundreds of thousands of small objects, none in a cycle (reference
    counting frees them), and each pass of the collector over them and
    everything else the process holds cost more than the reading itself
    (0.6 s of 1 s at 10,000 hosts)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def host_list(client: PlacementClient, name_contains: str = "", *,
              aggregate: str | None = None, trait: str | None = None,
              resource_class: str | None = None, sort: str = "name") -> HostList:
    """Every tree whose root name contains ``name_contains`` (any case) and
    which has a provider in ``aggregate``, a provider with ``trait`` and
    inventory of ``resource_class``; sorted by name or by usage (the
    busiest class, or ``resource_class``, fullest first).  One request
    against allotment."""
    with _bulk():
        records, requests = list_records(client)
        needle = name_contains.lower()
        hosts: dict[str, HostSummary] = {}
        for p in records:
            if p["parent_provider_uuid"] is None and needle in p["name"].lower():
                hosts[p["uuid"]] = HostSummary(p["uuid"], p["name"], 0,
                                               sharing=SHARING_TRAIT in p["traits"])
        for p in records:
            summary = hosts.get(p["root_provider_uuid"] or p["uuid"])
            if summary is None:
                continue
            summary.providers += 1
            summary.aggregates.update(p["aggregates"])
            summary.traits.update(p["traits"])
            usage, used = summary.usage, p["usages"]
            for rc, record in p["inventories"].items():
                amount = usage.get(rc)
                if amount is None:
                    amount = usage[rc] = Amount()
                amount.capacity += int((record["total"] - record["reserved"])
                                       * record["allocation_ratio"])
                amount.used += used.get(rc, 0)
        del records
    chosen = [h for h in hosts.values()
              if (aggregate is None or aggregate in h.aggregates)
              and (trait is None or trait in h.traits)
              and (resource_class is None or resource_class in h.usage)]
    chosen.sort(key=lambda h: (h.name, h.uuid))
    if sort == "usage":
        chosen.sort(key=lambda h: -_busiest(h, resource_class))
    total: dict[str, Amount] = {}
    by_aggregate: dict[str, dict[str, Amount]] = {}
    for h in chosen:
        if h.sharing:
            continue  # a pool's capacity is counted in the total once, below
        _add(total, h.usage)
        for agg in h.aggregates:
            _add(by_aggregate.setdefault(agg, {}), h.usage)
    for h in chosen:
        if h.sharing:
            _add(total, h.usage)
    return HostList(chosen, total, by_aggregate, requests)
