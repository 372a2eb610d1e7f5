"""Base of every routed resource."""

from __future__ import annotations

import falcon

from allotment import errors
from allotment.api import microversion, rendering
from allotment.runtime import Runtime

_METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH")


class Resource:
    """A URL of the API; subclasses define ``on_get``/``on_put``/....

    ``world_reads``: the methods answered from the process's provider world
    (allotment.world): their requests ask the database early whether it
    moved (api.ask_ahead).
    """

    world_reads: tuple[str, ...] = ()

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @property
    def conf(self):
        return self.runtime.conf

    @property
    def db(self):
        return self.runtime.db

    @property
    def replica(self):
        """The process's provider world (see allotment.world.sync)."""
        return self.runtime.replica

    def allowed_methods(self) -> list[str]:
        return [m for m in _METHODS if hasattr(self, f"on_{m.lower()}")]

    def on_options(self, req: falcon.Request, resp: falcon.Response, **_: str) -> None:
        # Placement answers OPTIONS like any other unsupported method (CORS
        # preflights are handled by the CORS middleware before routing).
        raise errors.MethodNotAllowed(
            "The method specified is not allowed for this resource.",
            headers={"allow": ", ".join(self.allowed_methods())})


def version(req: falcon.Request) -> tuple[int, int]:
    return rendering.version_of(req)


def require_version(req: falcon.Request, minimum: str, status: int = 404) -> None:
    """Refuse a request made at a microversion older than ``minimum``.

    Upstream answers such requests as if the URL (or method) did not exist.
    """
    if version(req) < microversion.parse(minimum):
        if status == 405:
            # Unlike an unrouted method, a method too new for the version
            # is refused without a detail.
            raise errors.MethodNotAllowed("")
        raise errors.NotFound("")


def set_location(req: falcon.Request, resp: falcon.Response, path: str) -> None:
    """Point ``Location`` at ``path`` (which starts with the SCRIPT_NAME).

    Upstream's answers carry an absolute URL there (scheme, host and port of
    the request), never a bare path, whatever the URL it names.
    """
    env = req.env
    scheme = env.get("wsgi.url_scheme", "http")
    host = env.get("HTTP_HOST") or f"{env.get('SERVER_NAME', '')}:{env.get('SERVER_PORT', '')}"
    # The scheme's default port is left out, whether the client named it or not.
    default = {"http": ":80", "https": ":443"}.get(scheme)
    if default and host.endswith(default):
        host = host[: -len(default)]
    resp.location = f"{scheme}://{host}{path}"


def authorize(req: falcon.Request, action: str, target: dict | None = None) -> None:
    req.context.ctx.can(action, target)
