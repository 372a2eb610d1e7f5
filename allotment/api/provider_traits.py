"""/resource_providers/{uuid}/traits (from 1.6)."""

from __future__ import annotations

import falcon

from allotment import errors
from allotment.api import body, rendering
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.service import provider_details
from allotment.service import provider_traits as service
from allotment.service.resource_providers import ProviderNotFound

PUT_SCHEMA = {
    "type": "object",
    "properties": {
        "traits": {"type": "array",
                   "items": {"type": "string", "minLength": 1, "maxLength": 255}},
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}


def _send(req: falcon.Request, resp: falcon.Response, provider, rows) -> None:
    rendering.send_json(req, resp, {
        "traits": [r.name for r in rows],
        "resource_provider_generation": provider.generation,
    }, last_modified=rendering.latest(*(r.updated_at or r.created_at for r in rows)))


class ProviderTraits(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:resource_providers:traits:list")
        # Before 1.15 the answer carries no Last-Modified, the one thing the
        # world does not know of (the traits' own timestamps).
        found = (provider_details.traits(self.replica, uuid)
                 if version(req) < rendering.CACHE_HEADERS_VERSION else None)
        if found is not None:
            generation, names = found
            rendering.send_json(req, resp, {
                "traits": names, "resource_provider_generation": generation})
            return
        try:
            provider, rows = service.get_traits(self.db, uuid)
        except ProviderNotFound as exc:
            raise errors.NotFound(f"{exc.detail}: {exc.detail}") from None
        _send(req, resp, provider, rows)

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        require_version(req, "1.6")
        body.require_json(req)
        authorize(req, "placement:resource_providers:traits:update")
        data = body.json_body(req, PUT_SCHEMA)
        provider, rows = service.set_traits(
            self.db, uuid, data["traits"], data["resource_provider_generation"])
        _send(req, resp, provider, rows)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:resource_providers:traits:delete")
        service.delete_traits(self.db, uuid)
        rendering.no_content(resp)
