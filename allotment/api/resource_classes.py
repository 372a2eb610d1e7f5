"""/resource_classes and /resource_classes/{name} (from 1.2)."""

from __future__ import annotations

import falcon

from allotment.api import body, rendering
from allotment.api.resource import Resource, authorize, require_version, set_location, version
from allotment.service import resource_classes as service

CUSTOM_CLASS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def put_schema(ver: tuple[int, int]) -> dict | None:
    """Body of PUT /resource_classes/{name}: a rename before 1.7, none after."""
    return CUSTOM_CLASS_SCHEMA if ver < (1, 7) else None


def _url(req: falcon.Request, name: str) -> str:
    return f"{req.env.get('SCRIPT_NAME', '')}/resource_classes/{name}"


def _render(req: falcon.Request, row) -> dict:
    return {"name": row.name, "links": [{"rel": "self", "href": _url(req, row.name)}]}


def _stamp(row):
    # Standard classes too: their rows were written when the names were
    # synced, and that time is what upstream answers.  A row without any
    # time (None) makes the answer's time now.
    return rendering.latest(row.created_at, row.updated_at)


class ResourceClasses(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.2")
        authorize(req, "placement:resource_classes:list")
        rows = service.list_classes(self.db)
        stamps = [_stamp(r) for r in rows]
        rendering.send_json(
            req, resp, {"resource_classes": [_render(req, r) for r in rows]},
            last_modified=rendering.latest(*stamps))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.2")
        body.require_json(req)
        authorize(req, "placement:resource_classes:create")
        data = body.json_body(req, CUSTOM_CLASS_SCHEMA)
        row = service.create_class(self.db, data["name"])
        rendering.no_content(resp, 201)
        set_location(req, resp, _url(req, row.name))


class ResourceClass(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.2")
        authorize(req, "placement:resource_classes:show")
        row = service.get_class(self.db, name)
        rendering.send_json(req, resp, _render(req, row), last_modified=_stamp(row))

    def on_put(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.2")
        if version(req) >= (1, 7):
            return self._ensure(req, resp, name)
        body.require_json(req)
        authorize(req, "placement:resource_classes:update")
        data = body.json_body(req, put_schema(version(req)))
        row = service.rename_class(self.db, name, data["name"])
        rendering.send_json(req, resp, _render(req, row), cache=False)

    def _ensure(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        """From 1.7 PUT is a bodiless create-or-confirm."""
        authorize(req, "placement:resource_classes:update")
        body.validate({"name": name}, CUSTOM_CLASS_SCHEMA)
        row, created = service.ensure_class(self.db, name)
        rendering.no_content(resp, 201 if created else 204)
        set_location(req, resp, _url(req, row.name))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        require_version(req, "1.2")
        authorize(req, "placement:resource_classes:delete")
        service.delete_class(self.db, name)
        rendering.no_content(resp)

