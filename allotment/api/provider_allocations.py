"""/resource_providers/{uuid}/allocations: every consumer's share of a provider."""

from __future__ import annotations

import falcon

from allotment.api import rendering
from allotment.api.allocations import last_modified
from allotment.api.resource import Resource, authorize, version
from allotment.service import allocations as service

# Each consumer's generation is shown from this microversion on.
CONSUMER_GENERATIONS = (1, 28)


def render(generation: int, rows, want: tuple[int, int]) -> dict:
    by_consumer: dict[str, dict] = {}
    for row in rows:
        entry = by_consumer.setdefault(row.consumer_uuid, {"resources": {}})
        entry["resources"][row.resource_class] = row.used
        if want >= CONSUMER_GENERATIONS:
            entry["consumer_generation"] = row.consumer_generation
    return {"allocations": by_consumer,
            "resource_provider_generation": generation}


class ProviderAllocations(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:allocations:list")
        want = version(req)
        # Consumer generations (1.28) and the last-modified stamp (1.15) are
        # read only at the microversions that show them.
        detail = rendering.cache_headers_at(want) or want >= CONSUMER_GENERATIONS
        generation, rows = service.get_for_provider(self.db, uuid, detail=detail)
        rendering.send_json(req, resp, render(generation, rows, want),
                            last_modified=last_modified(rows) if detail else None)
