"""Allocations: ``/allocations[/{consumer}]`` and a provider's allocations.

Allocations travel in the dict form of 1.12+: ``{rp_uuid: {"resources":
{rc: amount}}}``.  Reads return the bodies as the service sends them, the
shape ``get_allocations_for_provider_tree`` and the reshaper build on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allotment.client import versions as mv
from allotment.client._base import Noun, seg


def clean_allocations(allocations: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{rp: {"resources": {...}}}`` from a GET-shaped (or bare) mapping.

    Accepts ``{rp: {"generation": g, "resources": {...}}}`` as read from the
    service and ``{rp: {rc: amount}}`` as a shorthand; drops the provider
    generations, which are informational in reads and unwanted in writes.
    """
    out: dict[str, dict[str, Any]] = {}
    for rp, entry in allocations.items():
        resources = entry.get("resources", entry)
        resources = {rc: int(n) for rc, n in resources.items() if n}
        if resources:
            out[rp] = {"resources": resources}
    return out


def consumer_payload(
    record: Mapping[str, Any], version: str, *, consumer_generation: Any = ...,
) -> dict[str, Any]:
    """The body of one consumer for PUT /allocations/{c}, POST /allocations
    or the reshaper, at ``version``, from a GET-shaped record."""
    payload: dict[str, Any] = {"allocations": clean_allocations(record.get("allocations", {}))}
    if mv.at_least(version, "allocation_project_user"):
        payload["project_id"] = record["project_id"]
        payload["user_id"] = record["user_id"]
    if mv.at_least(version, "consumer_generations"):
        gen = record.get("consumer_generation") if consumer_generation is ... \
            else consumer_generation
        payload["consumer_generation"] = gen
    if mv.at_least(version, "consumer_types"):
        payload["consumer_type"] = record.get("consumer_type") or "INSTANCE"
    if record.get("mappings") and mv.at_least(version, "mappings"):
        payload["mappings"] = record["mappings"]
    return payload


class Allocations(Noun):
    def get(self, consumer: str, *, version: str | None = None) -> dict[str, Any]:
        """``GET /allocations/{consumer}``: ``{"allocations": {...}}`` plus,
        by microversion, project_id/user_id, consumer_generation, consumer_type.
        A consumer without allocations reads as ``{"allocations": {}}``."""
        return self._client.get(f"/allocations/{seg(consumer)}", version=version).json()

    def for_provider(self, rp: str, *, version: str | None = None) -> dict[str, Any]:
        """``GET /resource_providers/{rp}/allocations``: ``{"allocations":
        {consumer: {"resources": {...}}}, "resource_provider_generation": g}``."""
        return self._client.get(f"/resource_providers/{seg(rp)}/allocations",
                                version=version).json()

    def put(
        self,
        consumer: str,
        allocations: Mapping[str, Any],
        *,
        project_id: str,
        user_id: str,
        consumer_generation: int | None = None,
        consumer_type: str | None = None,
        mappings: Mapping[str, list[str]] | None = None,
        version: str | None = None,
    ) -> None:
        """Replace the allocations of ``consumer``.

        ``consumer_generation`` is None for a new consumer (1.28+); an empty
        ``allocations`` removes them all (1.28+ only).
        """
        version = self._version(version)
        mv.require(version, "allocations_dict")
        record = {"allocations": allocations, "project_id": project_id, "user_id": user_id,
                  "consumer_generation": consumer_generation,
                  "consumer_type": consumer_type, "mappings": mappings}
        self._client.put(f"/allocations/{seg(consumer)}",
                         consumer_payload(record, version), version=version)

    def post(self, records: Mapping[str, Mapping[str, Any]], *,
             version: str | None = None) -> None:
        """``POST /allocations``: replace several consumers' allocations at
        once; ``records`` maps consumer to a GET-shaped record."""
        version = self._version(version)
        mv.require(version, "post_allocations")
        payload = {c: consumer_payload(rec, version) for c, rec in records.items()}
        self._client.post("/allocations", payload, version=version)

    def delete(self, consumer: str, *, version: str | None = None) -> None:
        self._client.delete(f"/allocations/{seg(consumer)}", version=version)
