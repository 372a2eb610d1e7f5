"""/resource_providers/{uuid}/inventories and .../inventories/{resource_class}."""

from __future__ import annotations

import datetime

import falcon

from allotment import errors
from allotment.api import body, rendering
from allotment.api.resource import Resource, authorize, require_version, set_location
from allotment.api.resource_providers import at_least, provider_url
from allotment.service import inventories as service
from allotment.service import provider_details
from allotment.service import resource_providers as providers
from allotment.service.resource_providers import ProviderNotFound
from allotment.storage.inventories import FIELDS, MAX_INT, MAX_RATIO

_RC_PATTERN = "^[A-Z0-9_]+$"
_INT = {"type": "integer", "maximum": MAX_INT}
RECORD_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": {**_INT, "minimum": 1},
        "reserved": {**_INT, "minimum": 0},
        "min_unit": {**_INT, "minimum": 1},
        "max_unit": {**_INT, "minimum": 1},
        "step_size": {**_INT, "minimum": 1},
        "allocation_ratio": {"type": "number", "maximum": MAX_RATIO},
    },
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}
POST_SCHEMA = {
    **RECORD_SCHEMA,
    "properties": {**RECORD_SCHEMA["properties"],
                   "resource_class": {"type": "string", "pattern": _RC_PATTERN}},
    "required": ["total", "resource_class"],
}
PUT_ALL_SCHEMA = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {
                _RC_PATTERN: {**RECORD_SCHEMA, "required": ["total"]},
            },
            # Keys that cannot be class names are refused later as unknown
            # classes (as upstream does), but only once they are records.
            "additionalProperties": {**RECORD_SCHEMA, "required": ["total"]},
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}


def _url(req: falcon.Request, uuid: str, resource_class: str | None = None) -> str:
    url = f"{provider_url(req, uuid)}/inventories"
    return f"{url}/{resource_class}" if resource_class else url


def _record(data) -> dict:
    """The six inventory fields of a stored row or a request record."""
    if isinstance(data, dict):
        return {f: data[f] for f in FIELDS}
    return {f: getattr(data, f) for f in FIELDS}


def _fields(data: dict) -> dict:
    return {f: data[f] for f in FIELDS if f in data}


def _reserved_may_equal_total(req: falcon.Request) -> bool:
    return at_least(req, (1, 26))


def _provider_not_found(exc: ProviderNotFound) -> errors.NotFound:
    # The inventory listings word it this way upstream.
    return errors.NotFound(f"{exc.detail} : {exc.detail}")


def _send_inventories(req: falcon.Request, resp: falcon.Response, provider,
                      rows: dict, stamp: datetime.datetime | None) -> None:
    rendering.send_json(req, resp, {
        "resource_provider_generation": provider.generation,
        "inventories": {name: _record(row) for name, row in rows.items()},
    }, cache=False)
    # The newest inventory dates the collection; an empty one has no date,
    # so Placement sends no Last-Modified for it (but still no-cache).
    if stamp is not None:
        rendering.set_cache_headers(req, resp, stamp)
    elif rendering.version_of(req) >= rendering.CACHE_HEADERS_VERSION:
        resp.set_header("cache-control", "no-cache")


class Inventories(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, "placement:resource_providers:inventories:list")
        # Before 1.15 the answer carries no Last-Modified, the one thing the
        # world does not know of (the inventories' own timestamps).
        found = (provider_details.inventories(self.replica, uuid)
                 if not at_least(req, rendering.CACHE_HEADERS_VERSION) else None)
        if found is not None:
            generation, records = found
            rendering.send_json(req, resp, {
                "resource_provider_generation": generation, "inventories": records},
                cache=False)
            return
        try:
            provider, rows = service.list_inventories(self.db, uuid)
        except ProviderNotFound as exc:
            raise _provider_not_found(exc) from None
        _send_inventories(req, resp, provider, rows, rendering.latest(
            *(row.updated_at or row.created_at for row in rows.values())))

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:inventories:update")
        data = body.json_body_after(req, PUT_ALL_SCHEMA,
                                    lambda: providers.get_provider(self.db, uuid))
        provider, records = service.replace_inventories(
            self.db, uuid, data["resource_provider_generation"],
            {name: _fields(fields) for name, fields in data["inventories"].items()},
            reserved_may_equal_total=_reserved_may_equal_total(req))
        # Every inventory written was written just now.
        _send_inventories(req, resp, provider, records,
                          datetime.datetime.now(datetime.UTC) if records else None)

    def on_post(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:inventories:create")
        data = body.json_body_after(req, POST_SCHEMA,
                                    lambda: providers.get_provider(self.db, uuid))
        resource_class = data["resource_class"]
        provider, record = service.add_inventory(
            self.db, uuid, resource_class, _fields(data),
            reserved_may_equal_total=_reserved_may_equal_total(req))
        rendering.send_json(req, resp, {
            **_record(record), "resource_provider_generation": provider.generation,
        }, status=201)
        set_location(req, resp, _url(req, uuid, resource_class))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        require_version(req, "1.5", status=405)
        authorize(req, "placement:resource_providers:inventories:delete")
        service.delete_inventories(self.db, uuid)
        rendering.no_content(resp)


class Inventory(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str,
               resource_class: str) -> None:
        authorize(req, "placement:resource_providers:inventories:show")
        try:
            provider, row = service.get_inventory(self.db, uuid, resource_class)
        except ProviderNotFound as exc:
            raise _provider_not_found(exc) from None
        rendering.send_json(req, resp, {
            **_record(row), "resource_provider_generation": provider.generation,
        }, last_modified=row.updated_at or row.created_at)

    def on_put(self, req: falcon.Request, resp: falcon.Response, uuid: str,
               resource_class: str) -> None:
        body.require_json(req)
        authorize(req, "placement:resource_providers:inventories:update")
        data = body.json_body_after(req, RECORD_SCHEMA,
                                    lambda: providers.get_provider(self.db, uuid))
        provider, record = service.update_inventory(
            self.db, uuid, resource_class, data["resource_provider_generation"],
            _fields(data), reserved_may_equal_total=_reserved_may_equal_total(req))
        rendering.send_json(req, resp, {
            **_record(record), "resource_provider_generation": provider.generation,
        })

    def on_delete(self, req: falcon.Request, resp: falcon.Response, uuid: str,
                  resource_class: str) -> None:
        authorize(req, "placement:resource_providers:inventories:delete")
        service.delete_inventory(self.db, uuid, resource_class)
        rendering.no_content(resp)
