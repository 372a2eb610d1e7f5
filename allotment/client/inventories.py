"""Inventories: ``/resource_providers/{uuid}/inventories[/{resource_class}]``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from allotment.client import versions as mv
from allotment.client._base import Noun, seg

# What the service assumes for a field a request leaves out.
INVENTORY_DEFAULTS: dict[str, Any] = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": 2147483647,
    "step_size": 1,
    "allocation_ratio": 1.0,
}
INVENTORY_FIELDS = ("total", *INVENTORY_DEFAULTS)


def normalise(record: Mapping[str, Any]) -> dict[str, Any]:
    """One inventory record with every field present, as the service stores it."""
    out = dict(INVENTORY_DEFAULTS)
    out.update({k: v for k, v in record.items() if k in INVENTORY_FIELDS})
    out["allocation_ratio"] = float(out["allocation_ratio"])
    return out


def capacity(record: Mapping[str, Any]) -> int:
    rec = normalise(record)
    return int((rec["total"] - rec["reserved"]) * rec["allocation_ratio"])


@dataclass
class ProviderInventories:
    resource_provider_generation: int
    inventories: dict[str, dict[str, Any]] = field(default_factory=dict)


class Inventories(Noun):
    def _path(self, rp: str, rc: str | None = None) -> str:
        path = f"/resource_providers/{seg(rp)}/inventories"
        return path if rc is None else f"{path}/{seg(rc)}"

    def get(self, rp: str, *, version: str | None = None) -> ProviderInventories:
        body = self._client.get(self._path(rp), version=version).json()
        return ProviderInventories(body["resource_provider_generation"], body["inventories"])

    def set(
        self,
        rp: str,
        inventories: Mapping[str, Mapping[str, Any]],
        generation: int,
        *,
        version: str | None = None,
    ) -> ProviderInventories:
        """Replace every inventory of ``rp`` (those left out are deleted)."""
        payload = {"resource_provider_generation": generation,
                   "inventories": {rc: dict(rec) for rc, rec in inventories.items()}}
        body = self._client.put(self._path(rp), payload, version=version).json()
        return ProviderInventories(body["resource_provider_generation"], body["inventories"])

    def delete_all(self, rp: str, *, generation: int | None = None,
                   version: str | None = None) -> None:
        """Remove every inventory.  Before 1.5 this is a PUT of nothing and
        needs the provider's ``generation``."""
        version = self._version(version)
        if mv.at_least(version, "delete_all_inventory"):
            self._client.delete(self._path(rp), version=version)
            return
        if generation is None:
            generation = self.get(rp, version=version).resource_provider_generation
        self.set(rp, {}, generation, version=version)

    def get_one(self, rp: str, rc: str, *, version: str | None = None) -> dict[str, Any]:
        """One record, including ``resource_provider_generation``."""
        return self._client.get(self._path(rp, rc), version=version).json()

    def set_one(self, rp: str, rc: str, record: Mapping[str, Any], generation: int, *,
                version: str | None = None) -> dict[str, Any]:
        payload = dict(record)
        payload["resource_provider_generation"] = generation
        return self._client.put(self._path(rp, rc), payload, version=version).json()

    def create_one(self, rp: str, rc: str, record: Mapping[str, Any], generation: int, *,
                   version: str | None = None) -> dict[str, Any]:
        """``POST .../inventories`` (fails if ``rc`` already has inventory)."""
        payload = dict(record)
        payload["resource_class"] = rc
        payload["resource_provider_generation"] = generation
        return self._client.post(self._path(rp), payload, version=version).json()

    def delete_one(self, rp: str, rc: str, *, version: str | None = None) -> None:
        self._client.delete(self._path(rp, rc), version=version)
