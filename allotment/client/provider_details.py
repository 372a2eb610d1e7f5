"""Every provider with its inventories, usages, traits and aggregates.

Against allotment this is one request (the listing extension, see
docs/extensions.md); against upstream Placement, which ignores the header,
the same is read with one request per provider and reading, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allotment.client.inventories import normalise
from allotment.client.providers import Provider

if TYPE_CHECKING:
    from allotment.client._client import PlacementClient

EXTENSIONS_HEADER = "Allotment-Extensions"
EXTENSIONS_LEVEL = "1"
# Parents and roots appear in listings from 1.14, traits as a filter from
# 1.18, several member_of from 1.24: the listing is asked at the newest of
# them, whatever the client's default microversion.
LISTING_VERSION = "1.24"
# Traits of one provider: 1.6; aggregates: 1.1.
READ_VERSION = "1.6"


@dataclass
class DetailedProvider:
    provider: Provider
    inventories: dict[str, dict[str, Any]] = field(default_factory=dict)
    usages: dict[str, int] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)


def list_records(client: PlacementClient, params: list[tuple[str, str]] | None = None
                 ) -> tuple[list[dict[str, Any]], int]:
    """Providers matching ``params`` (listing query parameters) as the
    listing extension's entries (``uuid``, ``name``, ``generation``,
    ``parent_provider_uuid``, ``root_provider_uuid``, ``inventories``,
    ``usages``, ``traits``, ``aggregates``: plain data, for views that
    only sum them); and how many requests it took."""
    resp = client.get("/resource_providers", params=params or [], version=LISTING_VERSION,
                      headers={EXTENSIONS_HEADER: EXTENSIONS_LEVEL})
    body = resp.json()["resource_providers"]
    if resp.header(EXTENSIONS_HEADER) == EXTENSIONS_LEVEL:
        return body, 1
    requests = 1
    out = []
    for p in body:
        uuid = p["uuid"]
        inventories = client.inventories.get(uuid, version=READ_VERSION).inventories
        usages = client.usages.for_provider(uuid, version=READ_VERSION).usages
        traits = client.provider_traits.get(uuid, version=READ_VERSION).traits
        aggregates = client.aggregates.get(uuid, version=READ_VERSION).aggregates
        requests += 4
        out.append({"uuid": uuid, "name": p["name"], "generation": p.get("generation", 0),
                    "parent_provider_uuid": p.get("parent_provider_uuid"),
                    # Before 1.14 every provider is its own root.
                    "root_provider_uuid": p.get("root_provider_uuid", uuid),
                    "inventories": {rc: normalise(rec) for rc, rec in inventories.items()},
                    "usages": dict(usages), "traits": sorted(traits),
                    "aggregates": sorted(aggregates)})
    return out, requests


def list_detailed(client: PlacementClient, params: list[tuple[str, str]] | None = None
                  ) -> tuple[list[DetailedProvider], int]:
    """Providers matching ``params`` (listing query parameters), with their
    details; and how many requests it took."""
    records, requests = list_records(client, params)
    # Complete records, sorted lists, fresh objects: taken as they are
    # (a large cloud's listing has tens of thousands of them).
    return [DetailedProvider(Provider.from_body(p), p["inventories"], p["usages"],
                             p["traits"], p["aggregates"]) for p in records], requests
