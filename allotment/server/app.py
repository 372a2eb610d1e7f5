"""The composition root: the WSGI application, Falcon routes inside the
middleware stack.

The Placement API's resources and the web view's pages are built here, from
what they are given (the runtime; for the pages, the routed API to read
through), and mounted side by side.  Nothing below this module refers back
to the application."""

from __future__ import annotations

import logging

import falcon
from oslo_config import cfg
from oslo_middleware import cors as cors_mw
from oslo_middleware import http_proxy_to_wsgi

from allotment import errors
from allotment.api import (
    ask_ahead,
    candidates_codec,
    collector_pause,
    limits,
    metrics,
    negotiation,
    rendering,
    request_identity,
    wsgi_path,
)
from allotment.api import routes as api_routes
from allotment.auth import authenticate as auth_middleware
from allotment.auth.policy import Policy
from allotment.client import WSGIApp
from allotment.runtime import Runtime
from allotment.server import profiling
from allotment.service import setup
from allotment.storage.db import Database
from allotment.web import pages as web_pages
from allotment.web import routes as web_routes
from allotment.web import session as web_session
from allotment.world.sync import Replica

LOG = logging.getLogger(__name__)


def create_app(conf: cfg.ConfigOpts, *, db: Database | None = None,
               world: Replica | None = None, policy: Policy | None = None):
    """The full WSGI application for ``conf``.

    Prepares the database first (migrations where configured, standard
    resource classes and traits), so the first request finds a usable schema.
    ``world``: the provider world as this process's parent read it before
    forking it (allotment-api's shared world), served from here on;
    otherwise the world is read now.  The parent prepared the database
    before it read that world, so a process given one does not again.
    ``policy``: the rules as the parent read them (also shared with it),
    otherwise read now.
    """
    db = db or Database.from_conf(conf)
    if world is None:
        # Not when the world comes from the parent: its checks and the
        # standard names' sync would run again in every worker, copying the
        # shared pages of every object they read (their reference counts
        # are written): 5-7 MB of each worker's own memory at 10,000 NUMA
        # hosts.
        setup.prepare_database(db, conf)
    # The world keeps answers encoded as the API writes them: the API's
    # codec, given to it here once.
    codec = candidates_codec.CODEC
    replica = (setup.load_world(db, codec) if world is None
               else setup.carry_world(world, db, codec))
    runtime = Runtime(conf=conf, db=db, replica=replica)
    policy = policy or Policy(conf)

    app = falcon.App(
        middleware=[metrics.CountRequests(), negotiation.Microversion(),
                    negotiation.ContentChecks(),
                    limits.Middleware(limits.Limits.from_conf(conf)),
                    request_identity.Context()],
    )
    # Placement treats "a=" as a present-but-empty value and reports it.
    app.req_options.keep_blank_qs_values = True
    app.req_options.strip_url_path_trailing_slash = False
    # Every body we send names its type; bodiless 201s must not get one.
    app.resp_options.default_media_type = None
    # The web view reads through the routed application in process; the
    # echo of Allotment-Extensions tells its client that the listing
    # extension answered (without it the client reads provider by provider).
    served = routes(runtime, api=negotiation.ExtensionsEcho(app))
    for path, resource in served:
        app.add_route(path, resource)
    app.add_error_handler(Exception, _unexpected_error)
    app.add_error_handler(falcon.HTTPError, _framework_error)
    app.add_error_handler(errors.PlacementError, _placement_error)

    wsgi = auth_middleware.wrap(app, conf, policy)
    # Browsers carry their token in a cookie; only the web view reads it.
    wsgi = web_session.CookieToken(wsgi)
    if conf.cors.allowed_origin:
        wsgi = cors_mw.CORS(wsgi, conf)
    wsgi = request_identity.RequestId(negotiation.ExtensionsEcho(wsgi))
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        # Only then does it do anything; it costs a WebOb round trip.
        wsgi = http_proxy_to_wsgi.HTTPProxyToWSGI(wsgi, conf)
    wsgi = profiling.wrap(wsgi, conf)
    wsgi = ask_ahead.AskAhead(wsgi, replica.ask_ahead, replica.settle,
                              ask_ahead.world_readers(served))
    # /healthcheck needs no credentials; [allotment] metrics_bind's
    # requests reach /metrics without going through authentication.
    outer = wsgi_path.WsgiPath(
        metrics.Endpoints(collector_pause.CollectorPause(wsgi), app, conf))
    # The routed application, for whoever needs to list what is served.
    outer.falcon_app = app
    outer.runtime = runtime
    return outer


def routes(runtime: Runtime, api: WSGIApp) -> list[tuple[str, object]]:
    """Every URL served: the Placement API's, then the web view's, whose
    pages read through ``api`` (the routed application)."""
    return api_routes.build(runtime) + web_routes.build(runtime, api)


def _render(req: falcon.Request, resp: falcon.Response,
            exc: errors.PlacementError) -> None:
    metrics.count_error(exc)
    if web_pages.wants_page(req):
        web_pages.error_page(req, resp, exc.status, exc.title, exc.detail)
        for name, value in exc.headers.items():
            resp.set_header(name, value)
        return
    version = getattr(req.context, "microversion", None)
    resp.status = falcon.code_to_http_status(exc.status)
    resp.content_type, resp.data = rendering.error_answer(exc, req.env, version)
    for name, value in exc.headers.items():
        resp.set_header(name, value)


def _placement_error(req, resp, exc, params) -> None:
    _render(req, resp, exc)


_FRAMEWORK_MAP: dict[int, type[errors.PlacementError]] = {
    400: errors.BadRequest,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    406: errors.NotAcceptable,
    409: errors.Conflict,
    413: errors.RequestEntityTooLarge,
    414: errors.RequestURITooLong,
    415: errors.UnsupportedMediaType,
}


def _framework_error(req, resp, exc: falcon.HTTPError, params) -> None:
    """Errors Falcon raises itself (unknown route, wrong method ...)."""
    status = exc.status_code
    cls = _FRAMEWORK_MAP.get(status)
    if cls is None:
        cls = type("HTTPError", (errors.PlacementError,),
                   {"status": status, "title": exc.title or "Error"})
    if status == 405:
        detail = "The method specified is not allowed for this resource."
    elif status == 404:
        detail = ""
    else:
        detail = exc.description or exc.title or ""
    headers = dict(exc.headers or {})
    if "Allow" in headers:
        # Falcon counts its implicit OPTIONS responder; Placement does not.
        allowed = [m.strip() for m in headers.pop("Allow").split(",")]
        headers["allow"] = ", ".join(m for m in allowed if m != "OPTIONS")
    _render(req, resp, cls(detail, headers=headers))


def _unexpected_error(req, resp, exc: Exception, params) -> None:
    LOG.exception("Unexpected error handling %s %s", req.method, req.path)
    _render(req, resp, errors.PlacementError(str(exc)))
