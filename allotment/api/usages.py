"""/usages: what a project (or one of its users) consumes, from 1.9."""

from __future__ import annotations

import falcon
import jsonschema

from allotment import errors
from allotment.api import query, rendering
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.api.schema import first_error
from allotment.service import usages as service

_ID = {"type": "string", "minLength": 1, "maxLength": 255}

QUERY_SCHEMA = {
    "type": "object",
    "properties": {"project_id": _ID, "user_id": _ID},
    "required": ["project_id"],
    "additionalProperties": False,
}

# 1.38: narrow to, or fold, consumer types.
QUERY_SCHEMA_TYPES = {
    **QUERY_SCHEMA,
    "properties": {
        **QUERY_SCHEMA["properties"],
        "consumer_type": {"type": "string", "pattern": "^[A-Z0-9_]+$|^all|^unknown$",
                          "minLength": 1, "maxLength": 255},
    },
}


_STOCK_FORMATS = jsonschema.FormatChecker()


def query_schema(ver: tuple[int, int]) -> dict:
    """The query of GET /usages; consumer types arrive with 1.38."""
    return QUERY_SCHEMA_TYPES if ver >= (1, 38) else QUERY_SCHEMA


def _validate(params: dict, schema: dict) -> None:
    error = first_error(params, schema, format_checker=_STOCK_FORMATS)
    if error is not None:
        # Placement reports the whole validation error (keyword, schema path,
        # instance), as for every other query string it checks.
        raise errors.BadRequest(f"Invalid query string parameters: {error}")


class Usages(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.9")
        with_types = version(req) >= (1, 38)
        params = dict(query.pairs(req))  # the last value of a repeated key wins
        # The policy may limit callers to their own project: check first.
        authorize(req, "placement:usages", {"project_id": params.get("project_id")})
        _validate(params, query_schema(version(req)))
        project_id, user_id = params["project_id"], params.get("user_id")
        if with_types:
            usages = service.of_project_by_type(self.db, project_id, user_id,
                                                params.get("consumer_type"))
        else:
            usages = service.of_project(self.db, project_id, user_id)
        # Usage is a question about now, so "now" is its modification time.
        rendering.send_json(req, resp, {"usages": usages})
