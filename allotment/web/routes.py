"""Every URL of the web view and the resource that serves it."""

from __future__ import annotations

from allotment.client import WSGIApp
from allotment.runtime import Runtime
from allotment.web import session, static, views


def build(runtime: Runtime, api: WSGIApp) -> list[tuple[str, object]]:
    """The web view's routes; its pages read through ``api``, the routed
    Placement API, in-process."""
    return [
        ("/ui", views.Hosts(runtime, api)),
        ("/ui/trees/{uuid}", views.Tree(runtime, api)),
        ("/ui/capacity", views.Capacity(runtime, api)),
        ("/ui/what-if", views.WhatIf(runtime, api)),
        ("/ui/login", session.Login(runtime)),
        ("/ui/logout", session.Logout(runtime)),
        ("/ui/static/{name}", static.Static(runtime)),
        ("/favicon.ico", static.Favicon(runtime)),
    ]
