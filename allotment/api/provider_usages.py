"""/resource_providers/{uuid}/usages."""

from __future__ import annotations

import falcon

from allotment import errors
from allotment.api import rendering
from allotment.api.resource import Resource, authorize
from allotment.service import resource_providers as service


class ProviderUsages(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:usages")
        try:
            generation, usages = service.get_usages(self.replica, uuid)
        except service.ProviderNotFound as exc:
            raise errors.NotFound(f"{exc.detail}: {exc.detail}") from None
        # Usage is a question about now: upstream stamps it with the time.
        rendering.send_json(
            req, resp, {"resource_provider_generation": generation, "usages": usages})
