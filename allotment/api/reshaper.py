"""/reshaper (POST, from 1.30): move inventories and allocations atomically."""

from __future__ import annotations

import functools

import falcon

from allotment.api import body, rendering
from allotment.api.allocations import attempts, by_consumer, consumer_allocations
from allotment.api.inventories import PUT_ALL_SCHEMA
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.service import reshaper as service


# One dict per microversion, so its validator is built once (see by_consumer).
@functools.cache
def schema(want: tuple[int, int]) -> dict:
    # The allocations part is POST /allocations' body at this microversion
    # (always 1.28 or later), where no consumer at all is fine.
    return {
        "type": "object",
        "properties": {
            "inventories": {
                "type": "object",
                # Nothing to reshape without at least one provider.
                "minProperties": 1,
                "patternProperties": {"^[0-9a-fA-F-]{36}$": PUT_ALL_SCHEMA},
                "additionalProperties": False,
            },
            "allocations": by_consumer(want, min_consumers=0),
        },
        "required": ["inventories", "allocations"],
        "additionalProperties": False,
    }


class Reshaper(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.30")
        body.require_json(req)
        authorize(req, "placement:reshaper:reshape")
        want = version(req)
        data = body.json_body(req, schema(want))
        wanted = [
            service.ProviderInventories(
                provider_uuid=rp_uuid, generation=entry["resource_provider_generation"],
                inventories=entry["inventories"])
            for rp_uuid, entry in data["inventories"].items()
        ]
        batch = [consumer_allocations(self.conf, consumer_uuid, entry, want)
                 for consumer_uuid, entry in data["allocations"].items()]
        service.reshape(self.db, wanted, batch, attempts=attempts(self.conf))
        rendering.no_content(resp)
