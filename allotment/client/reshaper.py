"""``POST /reshaper``: inventories and allocations changed in one transaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allotment.client import versions as mv
from allotment.client._base import Noun
from allotment.client.allocations import consumer_payload


class Reshaper(Noun):
    def reshape(
        self,
        inventories: Mapping[str, Mapping[str, Any]],
        allocations: Mapping[str, Mapping[str, Any]],
        *,
        version: str | None = None,
    ) -> None:
        """``inventories``: ``{rp: {"inventories": {...},
        "resource_provider_generation": g}}`` — the complete final inventory
        of each provider named.  ``allocations``: ``{consumer: record}`` with
        records shaped like ``GET /allocations/{consumer}`` — each the
        complete final allocations of that consumer (empty removes them).
        """
        version = self._version(version)
        mv.require(version, "reshaper")
        payload = {
            "inventories": {
                rp: {"inventories": {rc: dict(r) for rc, r in entry["inventories"].items()},
                     "resource_provider_generation": entry["resource_provider_generation"]}
                for rp, entry in inventories.items()
            },
            "allocations": {c: consumer_payload(rec, version)
                            for c, rec in allocations.items()},
        }
        self._client.post("/reshaper", payload, version=version)
