"""Rendering helpers of the web view: Jinja2 templates from the package."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import falcon
import jinja2

from allotment import errors

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("allotment.web", "templates"),
    autoescape=jinja2.select_autoescape(default=True),
    undefined=jinja2.StrictUndefined,
)
_MAX_FORM = 64 * 1024


def render(req: falcon.Request, resp: falcon.Response, template: str, *,
           status: int = 200, **context: Any) -> None:
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = "text/html; charset=utf-8"
    resp.set_header("cache-control", "no-cache")
    # The pages and their assets come from this service only.
    resp.set_header("content-security-policy",
                    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
    ctx = getattr(req.context, "ctx", None)
    user = None
    if ctx is not None and ctx.user_id:
        user = ctx.user_id + (f" (project {ctx.project_id})" if ctx.project_id else "")
    resp.data = _ENV.get_template(template).render(
        base=req.env.get("SCRIPT_NAME", "") + "/ui", user=user, **context).encode()


def wants_page(req: falcon.Request) -> bool:
    """Whether an error on this request is answered as a page: a browser
    (asking for HTML) on the web view."""
    path = req.path
    return ((path == "/ui" or path.startswith("/ui/"))
            and "text/html" in (req.get_header("accept") or ""))


def error_page(req: falcon.Request, resp: falcon.Response, status: int, title: str,
               detail: str) -> None:
    """An error of the web view as a page, with the way back."""
    render(req, resp, "error.html", status=status, title=title, status_code=status,
           detail=detail)


def form(req: falcon.Request) -> dict[str, str]:
    """An url-encoded form body (last value of each field); anything else
    is refused like an API body of the wrong type."""
    content_type = (req.content_type or "").split(";")[0].strip()
    if content_type != "application/x-www-form-urlencoded":
        raise errors.UnsupportedMediaType(
            f"The media type {content_type or 'None'} is not supported, use "
            "application/x-www-form-urlencoded")
    raw = req.bounded_stream.read(_MAX_FORM)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.BadRequest("The form is not UTF-8") from None
    return {key: values[-1] for key, values in parse_qs(text).items()}


def percent(used: int, capacity: int) -> float:
    return min(100.0, 100.0 * used / capacity) if capacity else 0.0


_ENV.globals["percent"] = percent
