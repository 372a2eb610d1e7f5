"""Placement in-process: the full WSGI application, no socket, no server.

:class:`PlacementDirect` builds the application from a configuration (most
importantly ``[placement_database] connection``) and returns a client whose
requests go straight into it.  Requests still pass through the complete
stack — microversions, JSON schemas, policy — so code written against a
remote service behaves the same here.  Offline maintenance tools (moving
inventory and allocations while the API is down) are the intended use.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from oslo_config import cfg

from allotment.client.transport import Params, Response, encode_body, query_string

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]

# The in-process caller already holds the database credentials, so it is
# trusted with everything: admin, and the service role that reshaping needs.
ADMIN_TOKEN = "admin"
TRUSTED_ROLES = "admin,service"


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


class PlacementDirect:
    """Context manager giving a :class:`~allotment.client.PlacementClient`
    that talks to an in-process application.

    Give either a ready ``conf`` (a ``ConfigOpts`` with allotment's options
    registered, e.g. from :func:`allotment.conf.load`) or a ``database_url``
    and/or ``overrides`` (group -> {option: value}) to build one without
    reading any configuration file::

        with PlacementDirect(database_url="sqlite:///placement.sqlite") as client:
            client.providers.list()

    Authentication is forced to ``noauth2`` on the configuration used, as the
    database credentials already grant full access; requests carry the
    ``admin`` and ``service`` roles (``roles=`` to change that).
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts | None = None,
        *,
        database_url: str | None = None,
        overrides: Mapping[str, Mapping[str, object]] | None = None,
        microversion: str | None = None,
        token: str = ADMIN_TOKEN,
        roles: str = TRUSTED_ROLES,
    ) -> None:
        if conf is not None and (database_url or overrides):
            raise ValueError("give either conf, or database_url/overrides")
        self._conf = conf
        self._database_url = database_url
        self._overrides = overrides
        self._microversion = microversion
        self._token = token
        self._roles = roles
        self._db = None
        self.client = None

    def _build_conf(self) -> cfg.ConfigOpts:
        from allotment import conf as conf_mod

        if self._conf is not None:
            return self._conf
        overrides: dict[str, dict[str, object]] = {
            group: dict(values) for group, values in (self._overrides or {}).items()}
        if self._database_url:
            overrides.setdefault("placement_database", {})["connection"] = self._database_url
        return conf_mod.load(config_files=[], overrides=overrides)

    def __enter__(self):
        from allotment.api.app import create_app
        from allotment.client.api import PlacementClient
        from allotment.storage.db import Database

        conf = self._build_conf()
        conf.set_override("auth_strategy", "noauth2", group="api")
        self._db = Database.from_conf(conf)
        try:
            app = create_app(conf, db=self._db)
        except BaseException:
            self._db.dispose()
            self._db = None
            raise
        kwargs = {} if self._microversion is None else {"microversion": self._microversion}
        self.client = PlacementClient(DirectTransport(app, token=self._token),
                                      headers={"X-Roles": self._roles}, **kwargs)
        return self.client

    def __exit__(self, *exc_info) -> None:
        if self._db is not None:
            self._db.dispose()
            self._db = None
        self.client = None
