"""Browser sign-in for the web view: the token travels in a cookie.

API clients send ``X-Auth-Token``; a browser cannot, so ``/ui/login``
stores the token in a cookie scoped to ``/ui`` and :class:`CookieToken`
turns it back into the header before authentication, for ``/ui`` paths
only. The token is then checked exactly as an API request's would be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import quote

import falcon

from allotment.web import pages

COOKIE = "allotment_token"
PREFIX = "/ui"
LOGIN = "/ui/login"
LOGOUT = "/ui/logout"


class CookieToken:
    """WSGI middleware: the cookie's token as ``X-Auth-Token`` on /ui; a
    browser with no token at all is sent to the sign-in page."""

    def __init__(self, application: Callable) -> None:
        self.application = application

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == PREFIX + "/":
            # The host list lives at /ui; /ui/ is what people type.
            query = environ.get("QUERY_STRING", "")
            location = environ.get("SCRIPT_NAME", "") + PREFIX + (f"?{query}" if query else "")
            start_response("301 Moved Permanently", [("Location", location),
                                                     ("Content-Length", "0")])
            return [b""]
        if (path == PREFIX or path.startswith(PREFIX + "/")) \
                and "HTTP_X_AUTH_TOKEN" not in environ:
            token = _cookie_token(environ.get("HTTP_COOKIE", ""))
            if token:
                environ["HTTP_X_AUTH_TOKEN"] = token
            elif not path.startswith((LOGIN, PREFIX + "/static/", LOGOUT)) and \
                    "text/html" in environ.get("HTTP_ACCEPT", ""):
                script = environ.get("SCRIPT_NAME", "")
                start_response("303 See Other", [("Location", script + LOGIN),
                                                 ("Content-Length", "0")])
                return [b""]
        return self.application(environ, start_response)


def _cookie_token(header: str) -> str | None:
    try:
        morsel = SimpleCookie(header).get(COOKIE)
    except CookieError:
        return None
    return morsel.value if morsel is not None and morsel.value else None


class Login:
    """GET: the sign-in form. POST: keep the token in a cookie, go to /ui."""

    serves = "text/html"

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        pages.render(req, resp, "login.html", title="Sign in")

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        form = pages.form(req)
        token = form.get("token", "").strip()
        if not token:
            pages.render(req, resp, "login.html", title="Sign in",
                         message="A token is required.", status=400)
            return
        script = req.env.get("SCRIPT_NAME", "")
        resp.status = falcon.HTTP_303
        resp.location = script + PREFIX
        # Secure whenever the browser reached us over TLS (directly, or as
        # the proxy-headers middleware reports it).
        secure = "; Secure" if req.scheme == "https" else ""
        resp.append_header(
            "Set-Cookie",
            f"{COOKIE}={quote(token, safe='')}; Path={script}{PREFIX}; HttpOnly; "
            f"SameSite=Strict{secure}")


class Logout:
    """POST: forget the token (the cookie expires), back to the sign-in page."""

    serves = "text/html"

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        script = req.env.get("SCRIPT_NAME", "")
        resp.status = falcon.HTTP_303
        resp.location = script + LOGIN
        resp.append_header(
            "Set-Cookie",
            f"{COOKIE}=; Path={script}{PREFIX}; HttpOnly; SameSite=Strict; Max-Age=0")
