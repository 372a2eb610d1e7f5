"""A small in-process HTTP client for the WSGI app, used by the API tests."""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import webob


@dataclass
class Response:
    status: int
    headers: webob.response.ResponseHeaders
    text: str

    @property
    def json(self) -> Any:
        return jsonlib.loads(self.text) if self.text else None

    def error(self) -> dict:
        """The single error of a Placement error document."""
        body = self.json
        assert isinstance(body, dict) and len(body.get("errors", [])) == 1, self.text
        return body["errors"][0]

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.text[:300]!r}>"


class Client:
    """Speaks to a WSGI app the way an HTTP client would, without sockets.

    ``version`` is the microversion sent in ``OpenStack-API-Version``
    (None sends no header); ``token`` the ``X-Auth-Token`` (noauth2).
    """

    def __init__(self, app, *, version: str | None = "latest", token: str | None = "admin"):
        self.app = app
        self.version = version
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        body: bytes | str | None = None,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
        version: str | type[Ellipsis] | None = ...,
        token: str | type[Ellipsis] | None = ...,
    ) -> Response:
        # Percent-encode non-ASCII the way an HTTP client puts it on the wire.
        req = webob.Request.blank(quote(path, safe="/?&=:,!%+;"), method=method)
        version = self.version if version is ... else version
        token = self.token if token is ... else token
        if version is not None:
            req.headers["OpenStack-API-Version"] = f"placement {version}"
        if token is not None:
            req.headers["X-Auth-Token"] = token
        if json is not None:
            req.body = jsonlib.dumps(json).encode()
            req.content_type = content_type or "application/json"
        elif body is not None:
            req.body = body.encode() if isinstance(body, str) else body
            if content_type:
                req.content_type = content_type
        for name, value in (headers or {}).items():
            req.headers[name] = value
        resp = req.get_response(self.app)
        return Response(resp.status_code, resp.headers, resp.text)

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def put(self, path: str, json: Any = None, **kw) -> Response:
        return self.request("PUT", path, json=json, **kw)

    def post(self, path: str, json: Any = None, **kw) -> Response:
        return self.request("POST", path, json=json, **kw)

    def delete(self, path: str, **kw) -> Response:
        return self.request("DELETE", path, **kw)
