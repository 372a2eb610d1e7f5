"""WSGI middleware that authenticates a request and builds its context.

:func:`wrap` puts, outermost first, the authentication middleware chosen by
``[api] auth_strategy`` and then :class:`ContextMiddleware` around the app.
oslo.middleware's RequestId is expected outside of both, so the request id is
already in the environ.  The root document (``/``) is reachable without
credentials, as in Placement, so clients can discover versions; so is the
OpenAPI document (``/openapi.json``), which describes the API and holds no data.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from oslo_config import cfg
from oslo_middleware import request_id

from allotment import error_pages, errors
from allotment.auth.public import WSGIApp, is_root
from allotment.context import PolicyChecker, RequestContext

LOG = logging.getLogger(__name__)

CONTEXT_KEY = "allotment.context"


def unauthorized(
    environ: dict, start_response: Callable, detail: str
) -> list[bytes]:
    """Answer 401 in Placement's JSON error shape, or as an HTML or text
    page to a client that asks for one."""
    form = error_pages.negotiate(environ)
    if form != error_pages.JSON:
        # Upstream's pages for a missing token carry no detail.
        page = errors.Unauthorized("")
        text = (error_pages.html_page(page, environ) if form == error_pages.HTML
                else error_pages.plain_page(page, page.format_detail(environ)))
        data = text.encode("utf-8")
        start_response("401 Unauthorized", [
            ("Content-Type", f"{form}; charset=UTF-8"), ("Content-Length", str(len(data)))])
        return [data]
    exc = errors.Unauthorized(detail)
    error: dict[str, Any] = {
        "status": exc.status,
        "title": exc.title,
        "detail": exc.format_detail(environ),
    }
    req_id = environ.get(request_id.ENV_REQUEST_ID)
    if req_id:
        error["request_id"] = req_id
    body = json.dumps({"errors": [error]}).encode("utf-8")
    start_response("401 Unauthorized", [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ])
    return [body]


class NoAuthMiddleware:
    """Fake authentication for tests and development (``noauth2``).

    The token is ``user`` or ``user:project``; the user ``admin`` gets the
    admin role unless ``X-Roles`` says otherwise.  With an
    ``OpenStack-System-Scope`` header no project is set, so the token is
    system scoped.  Headers are rewritten the way keystonemiddleware would,
    which lets policy tests run without a keystone.
    """

    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if is_root(environ):
            return self.application(environ, start_response)
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if token is None:
            return unauthorized(environ, start_response,
                                "No X-Auth-Token header was supplied.")
        user_id, _sep, project_id = token.partition(":")
        if "HTTP_X_ROLES" in environ:
            roles = environ["HTTP_X_ROLES"]
        elif user_id == "admin":
            roles = "admin"
        else:
            roles = ""
        environ["HTTP_X_USER_ID"] = user_id
        # A project id sent by the client (X-Project-Id) still wins over
        # this one when the context is built, exactly as in Placement.
        if not environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE"):
            environ["HTTP_X_TENANT_ID"] = project_id or user_id
        environ["HTTP_X_ROLES"] = roles
        return self.application(environ, start_response)


class ContextMiddleware:
    """Build the :class:`RequestContext` and put it in the environ.

    Anything but the root document needs a user: keystonemiddleware with
    ``delay_auth_decision`` lets anonymous requests through, and they stop
    here.
    """

    def __init__(self, application: WSGIApp, policy: PolicyChecker) -> None:
        self.application = application
        self.policy = policy

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        ctx = RequestContext.from_environ(
            environ,
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            policy=self.policy,
        )
        if ctx.user_id is None and not is_root(environ):
            LOG.debug("Neither X_USER_ID nor X_USER found in request")
            return unauthorized(environ, start_response,
                                "The request carries no user identity.")
        environ[CONTEXT_KEY] = ctx
        return self.application(environ, start_response)


def wrap(app: WSGIApp, conf: cfg.ConfigOpts, policy: PolicyChecker) -> WSGIApp:
    """Put authentication and context middleware around ``app``."""
    inner = ContextMiddleware(app, policy)
    if conf.api.auth_strategy == "noauth2":
        return NoAuthMiddleware(inner)
    # Imported only here: keystonemiddleware (with keystoneauth, oslo.cache,
    # keystoneclient) would otherwise be resident in every process of a
    # server that never asks Keystone.
    from allotment.auth.keystone import KeystoneAuthMiddleware

    return KeystoneAuthMiddleware(inner, conf)
