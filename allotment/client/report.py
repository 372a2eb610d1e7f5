"""Read-only reports for operators: one host's tree with its usage, and
capacity and usage per host.  Shared by the ``allotment`` CLI and the web
view, so both show the same numbers the API gives.
"""

from __future__ import annotations

import uuid as uuid_mod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allotment.client.exceptions import ClientError
from allotment.client.inventories import capacity, normalise
from allotment.client.providers import Provider, parents_first

if TYPE_CHECKING:
    from allotment.client.api import PlacementClient

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

    def as_dict(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "name": self.name, "providers": self.providers,
                "sharing": self.sharing,
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
        found = client.providers.find(host)
        if found is not None:
            return found
    by_name = client.providers.list(name=host)
    if not by_name:
        raise ClientError(f"No resource provider named or with uuid {host!r}")
    return by_name[0]


def provider_report(client: PlacementClient, provider: Provider,
                    depth: int = 0) -> ProviderReport:
    inventories = client.inventories.get(provider.uuid).inventories
    usages = client.usages.for_provider(provider.uuid).usages
    report = ProviderReport(
        uuid=provider.uuid, name=provider.name, generation=provider.generation,
        parent_provider_uuid=provider.parent_provider_uuid, depth=depth,
        inventories={rc: normalise(rec) for rc, rec in sorted(inventories.items())},
        traits=sorted(client.provider_traits.get(provider.uuid).traits),
        aggregates=sorted(client.aggregates.get(provider.uuid).aggregates),
    )
    for rc, record in report.inventories.items():
        report.usage[rc] = Amount(capacity(record), usages.get(rc, 0))
    return report


def tree_report(client: PlacementClient, host: str) -> TreeReport:
    """The whole tree containing ``host`` (a name or uuid of any of its
    providers), with the sharing providers in any of its aggregates."""
    start = find_provider(client, host)
    members = parents_first(client.providers.in_tree(start.uuid))
    depth: dict[str, int] = {}
    reports = []
    for provider in members:
        depth[provider.uuid] = (depth.get(provider.parent_provider_uuid, -1) + 1
                                if provider.parent_provider_uuid else 0)
        reports.append(provider_report(client, provider, depth[provider.uuid]))
    in_tree = {p.uuid for p in reports}
    aggregates = {agg for p in reports for agg in p.aggregates}
    sharing = [provider_report(client, p)
               for p in sorted(client.providers.sharing(aggregates), key=lambda p: p.name)
               if p.uuid not in in_tree]
    return TreeReport(reports, sharing)


def host_summaries(client: PlacementClient, name_contains: str = "") -> list[HostSummary]:
    """Every tree whose root name contains ``name_contains`` (any case)."""
    everything = client.providers.list()
    sharing = {p.uuid for p in client.providers.list(required=[SHARING_TRAIT])}
    roots = {p.uuid: HostSummary(p.uuid, p.name, 0, sharing=p.uuid in sharing)
             for p in everything
             if p.parent_provider_uuid is None
             and name_contains.lower() in p.name.lower()}
    for provider in everything:
        summary = roots.get(provider.root_provider_uuid or provider.uuid)
        if summary is None:
            continue
        summary.providers += 1
        inventories = client.inventories.get(provider.uuid).inventories
        if not inventories:
            continue
        usages = client.usages.for_provider(provider.uuid).usages
        for rc, record in inventories.items():
            amount = summary.usage.setdefault(rc, Amount())
            amount.capacity += capacity(record)
            amount.used += usages.get(rc, 0)
    return sorted(roots.values(), key=lambda s: (s.name, s.uuid))
