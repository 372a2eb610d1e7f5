"""Provider aggregates: ``/resource_providers/{uuid}/aggregates``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from allotment.client import versions as mv
from allotment.client._base import Noun, seg


@dataclass
class ProviderAggregates:
    # None before 1.19, which neither reports nor checks generations here.
    resource_provider_generation: int | None
    aggregates: set[str] = field(default_factory=set)


class Aggregates(Noun):
    def _path(self, rp: str) -> str:
        return f"/resource_providers/{seg(rp)}/aggregates"

    def get(self, rp: str, *, version: str | None = None) -> ProviderAggregates:
        version = self._version(version)
        mv.require(version, "aggregates")
        body = self._client.get(self._path(rp), version=version).json()
        return ProviderAggregates(body.get("resource_provider_generation"),
                                  set(body["aggregates"]))

    def set(self, rp: str, aggregates: Iterable[str], generation: int | None = None, *,
            version: str | None = None) -> ProviderAggregates:
        """Replace the aggregates of ``rp``; from 1.19 ``generation`` is required."""
        version = self._version(version)
        mv.require(version, "aggregates")
        aggs = sorted(set(aggregates))
        if mv.at_least(version, "aggregate_generations"):
            if generation is None:
                raise ValueError("a resource provider generation is required from 1.19")
            payload: object = {"aggregates": aggs, "resource_provider_generation": generation}
        else:
            payload = aggs
        body = self._client.put(self._path(rp), payload, version=version).json()
        return ProviderAggregates(body.get("resource_provider_generation"),
                                  set(body["aggregates"]))
