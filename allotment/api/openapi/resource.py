"""GET /openapi.json: the document, built once per process."""

from __future__ import annotations

import functools

import falcon

from allotment.api.openapi.document import build, dumps
from allotment.api.resource import Resource


@functools.cache
def _encoded() -> bytes:
    return dumps(build()).encode()


class OpenApiDocument(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        # Like the version document: no credentials needed, no microversion
        # changes it (it describes them all).
        resp.content_type = "application/json"
        resp.data = _encoded()
