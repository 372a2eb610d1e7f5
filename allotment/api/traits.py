"""/traits and /traits/{name} (from 1.6)."""

from __future__ import annotations

import re

import falcon

from allotment import errors
from allotment.api import query, rendering
from allotment.api.resource import Resource, authorize, require_version, set_location
from allotment.service import traits as service

_CUSTOM_TRAIT = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


def _url(req: falcon.Request, name: str) -> str:
    return f"{req.env.get('SCRIPT_NAME', '')}/traits/{name}"


def _name_filter(value: str) -> dict:
    op, sep, operand = value.partition(":")
    if not sep:
        raise errors.BadRequest(
            "Badly formatted name parameter. Expected name query string "
            "parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. "
            f'Got: "{value}"')
    if op == "in":
        return {"names_in": operand.split(",")}
    if op == "startswith":
        return {"prefix": operand}
    # Upstream ignores other operators and lists everything.
    return {}


class Traits(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:traits:list")
        params = query.last_values(req, {"name", "associated"})
        filters: dict = {}
        if "name" in params:
            filters.update(_name_filter(params["name"]))
        if "associated" in params:
            flag = params["associated"].lower()
            if flag not in ("true", "false"):
                raise errors.BadRequest(
                    'The query parameter "associated" only accepts "true" or "false"')
            filters["associated"] = flag == "true"
        rows = service.list_traits(self.db, **filters)
        rendering.send_json(
            req, resp, {"traits": [r.name for r in rows]},
            last_modified=rendering.latest(
                *(rendering.latest(r.created_at, r.updated_at) for r in rows)))


class Trait(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:traits:show")
        row = service.get_trait(self.db, name)
        rendering.no_content(resp)
        rendering.set_cache_headers(req, resp, row.created_at)

    def on_put(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:traits:update")
        if len(name) > 255 or not _CUSTOM_TRAIT.match(name):
            raise errors.BadRequest(
                "The trait is invalid. A valid trait must be no longer than 255 "
                'characters, start with the prefix "CUSTOM_" and use following '
                'characters: "A"-"Z", "0"-"9" and "_"')
        row, created = service.ensure_trait(self.db, name)
        rendering.no_content(resp, 201 if created else 204)
        set_location(req, resp, _url(req, name))
        rendering.set_cache_headers(req, resp, row.created_at)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.6")
        authorize(req, "placement:traits:delete")
        service.delete_trait(self.db, name)
        rendering.no_content(resp)
