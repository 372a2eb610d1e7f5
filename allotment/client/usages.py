"""Usages: a provider's usages and ``/usages`` totals for a project."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allotment.client import versions as mv
from allotment.client._base import Noun, seg


@dataclass
class ProviderUsages:
    resource_provider_generation: int
    usages: dict[str, int] = field(default_factory=dict)


class Usages(Noun):
    def for_provider(self, rp: str, *, version: str | None = None) -> ProviderUsages:
        body = self._client.get(f"/resource_providers/{seg(rp)}/usages",
                                version=version).json()
        return ProviderUsages(body["resource_provider_generation"], body["usages"])

    def totals(self, project_id: str, *, user_id: str | None = None,
               consumer_type: str | None = None,
               version: str | None = None) -> dict[str, Any]:
        """``GET /usages``: ``{rc: n}`` before 1.38, ``{consumer_type:
        {"consumer_count": n, rc: n}}`` from 1.38."""
        version = self._version(version)
        mv.require(version, "usages")
        params = [("project_id", project_id)]
        if user_id is not None:
            params.append(("user_id", user_id))
        if consumer_type is not None:
            mv.require(version, "consumer_types")
            params.append(("consumer_type", consumer_type))
        return self._client.get("/usages", params=params, version=version).json()["usages"]
