"""/resource_providers/{uuid}/aggregates (from 1.1)."""

from __future__ import annotations

import falcon

from allotment.api import body, rendering
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.api.resource_providers import at_least
from allotment.service import aggregates as service
from allotment.service import provider_details
from allotment.service import resource_providers as providers

_LIST = {"type": "array", "items": {"type": "string", "format": "uuid"},
         "uniqueItems": True}
PUT_SCHEMA_1_1 = _LIST
PUT_SCHEMA_1_19 = {
    "type": "object",
    "properties": {"aggregates": _LIST,
                   "resource_provider_generation": {"type": "integer"}},
    "required": ["aggregates", "resource_provider_generation"],
    "additionalProperties": False,
}
# From this microversion the generation travels with the aggregates.
GENERATION_VERSION = (1, 19)


def put_schema(ver: tuple[int, int]) -> dict:
    """Body of PUT /resource_providers/{uuid}/aggregates."""
    return PUT_SCHEMA_1_19 if ver >= GENERATION_VERSION else PUT_SCHEMA_1_1


def _send(req: falcon.Request, resp: falcon.Response, generation: int,
          aggregates: list[str]) -> None:
    payload: dict = {"aggregates": aggregates}
    if at_least(req, GENERATION_VERSION):
        payload["resource_provider_generation"] = generation
    # Membership changes carry no timestamp of their own: "now", as upstream.
    rendering.send_json(req, resp, payload)


class ProviderAggregates(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        require_version(req, "1.1")
        authorize(req, "placement:resource_providers:aggregates:list")
        found = provider_details.aggregates(self.replica, uuid)
        if found is None:
            provider, aggregates = service.get_aggregates(self.db, uuid)
            found = provider.generation, aggregates
        _send(req, resp, *found)

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        body.require_json(req)
        require_version(req, "1.1")
        authorize(req, "placement:resource_providers:aggregates:update")
        with_generation = at_least(req, GENERATION_VERSION)
        data = body.json_body_after(req, put_schema(version(req)),
                                    lambda: providers.get_provider(self.db, uuid))
        if with_generation:
            aggregates, generation = data["aggregates"], data["resource_provider_generation"]
        else:
            aggregates, generation = data, None
        provider = service.set_aggregates(self.db, uuid, aggregates, generation=generation)
        _send(req, resp, provider.generation, aggregates)
