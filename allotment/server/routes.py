"""Every URL the application serves: the Placement API's, then the web view's."""

from __future__ import annotations

from allotment.api import routes as api_routes
from allotment.client import WSGIApp
from allotment.runtime import Runtime
from allotment.web import routes as web_routes


def build(runtime: Runtime, api: WSGIApp) -> list[tuple[str, object]]:
    """``api`` is the routed application the web view's pages read through."""
    return api_routes.build(runtime) + web_routes.build(runtime, api)
