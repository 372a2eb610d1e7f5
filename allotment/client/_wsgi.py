"""A transport into a WSGI application in the same process: no socket.

:class:`DirectTransport` knows nothing of the server it calls: it is given
a WSGI callable (allotment's application, built by
:class:`allotment.server.in_process.PlacementDirect`, or any other) and turns
each request into an environ for it.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from allotment.client._transports import Params, Response, encode_body, query_string

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]

# Sent unless told otherwise: a caller in the same process as the
# application usually holds its database credentials already.
ADMIN_TOKEN = "admin"


class DirectTransport:
    """Calls a WSGI application with a synthesised environ."""

    def __init__(self, app: WSGIApp, *, token: str | None = ADMIN_TOKEN,
                 environ: Mapping[str, Any] | None = None) -> None:
        self.app = app
        self.token = token
        # Added to every request's environ (e.g. an already-built request
        # context, for callers inside the service).
        self.environ = dict(environ or {})

    def request(self, method, path, *, params: Params = None, json: Any = None,
                headers: Mapping[str, str] | None = None) -> Response:
        body = encode_body(json) or b""
        path_only, _, inline_qs = path.partition("?")
        qs = query_string(params)
        if inline_qs:
            qs = f"{inline_qs}&{qs}" if qs else inline_qs
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method.upper(),
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path_only),
            "QUERY_STRING": qs,
            "SERVER_NAME": "placement.direct",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "HTTP_HOST": "placement.direct",
            **self.environ,
        }
        hdrs = dict(headers or {})
        if self.token is not None:
            hdrs.setdefault("X-Auth-Token", self.token)
        if body:
            hdrs.setdefault("Content-Type", "application/json")
            environ["CONTENT_LENGTH"] = str(len(body))
        for name, value in hdrs.items():
            key = name.upper().replace("-", "_")
            if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                environ[key] = value
            else:
                environ[f"HTTP_{key}"] = value

        captured: dict[str, Any] = {}

        def start_response(status: str, response_headers, exc_info=None):
            captured["status"] = int(status.split(" ", 1)[0])
            captured["headers"] = response_headers
            return lambda data: captured.setdefault("written", []).append(data)

        result = self.app(environ, start_response)
        try:
            chunks = list(captured.get("written", [])) + list(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return Response(captured["status"], dict(captured["headers"]), b"".join(chunks))

    def close(self) -> None:
        pass
