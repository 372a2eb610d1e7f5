"""A scripted transport for unit tests of the client."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from allotment.client import Response


@dataclass
class Sent:
    method: str
    path: str
    params: list[tuple[str, str]]
    json: Any
    headers: dict[str, str]

    @property
    def version(self) -> str:
        return self.headers["OpenStack-API-Version"]


@dataclass
class FakeTransport:
    """Answers each request with the next scripted response (default 204)."""

    responses: list[Response] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def reply(self, status: int, body: Any = None, headers: dict | None = None) -> None:
        raw = b"" if body is None else json.dumps(body).encode()
        self.responses.append(Response(status, headers or {}, raw))

    def request(self, method, path, *, params=None, json=None, headers=None) -> Response:
        items = list(params.items()) if isinstance(params, dict) else list(params or [])
        self.sent.append(Sent(method, path, items, json, dict(headers or {})))
        return self.responses.pop(0) if self.responses else Response(204)

    def close(self) -> None:
        pass


def error_body(status: int, detail: str, code: str | None = None,
               request_id: str = "req-1") -> dict:
    err: dict[str, Any] = {"status": status, "title": "x", "detail": detail,
                           "request_id": request_id}
    if code:
        err["code"] = code
    return {"errors": [err]}
