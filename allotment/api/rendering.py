"""Response helpers shared by every handler: JSON bodies, cache headers, errors."""

from __future__ import annotations

import datetime
import re
import time
from email.utils import format_datetime, formatdate
from typing import Any

import falcon
import orjson

from allotment import error_pages, errors
from allotment.api import microversion

# Error bodies carry a "code" from this microversion on.
ERROR_CODE_VERSION = (1, 23)
# last-modified / cache-control appear from this microversion on.
CACHE_HEADERS_VERSION = (1, 15)

_BREAK = re.compile(r"<br.*?>", re.I | re.S)
_COMMENT = re.compile(r"<!--|-->")
_TAG = re.compile(r"<.*?>", re.S)


def version_of(req: falcon.Request) -> tuple[int, int]:
    return getattr(req.context, "microversion", microversion.MIN_VERSION)


def send_json(
    req: falcon.Request,
    resp: falcon.Response,
    body: Any,
    *,
    status: int = 200,
    last_modified: datetime.datetime | None = None,
    cache: bool = True,
) -> None:
    """Write a JSON body; add last-modified/cache-control where upstream does.

    ``cache`` false is for the few responses upstream leaves without those
    headers.  A missing ``last_modified`` means "now", as upstream reports for
    data without a single modification time.
    """
    write_json(resp, dumps(body), status=status, last_modified=last_modified,
               cache_headers=cache and cache_headers_at(version_of(req)))


def write_json(
    resp: falcon.Response,
    data: bytes,
    *,
    status: int = 200,
    last_modified: datetime.datetime | None = None,
    cache_headers: bool,
) -> None:
    """Write a JSON body already encoded, with last-modified/cache-control
    when ``cache_headers`` (see :func:`cache_headers_at`): for handlers
    that read what they need of the request before answering."""
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = "application/json"
    resp.data = data
    if cache_headers:
        _add_cache_headers(resp, last_modified)


def cache_headers_at(version: tuple[int, int]) -> bool:
    """Whether answers at microversion ``version`` carry last-modified and
    cache-control."""
    return version >= CACHE_HEADERS_VERSION


def dumps(body: Any) -> bytes:
    """JSON for a response body (compact; orjson is several times faster
    than the standard library on the big documents candidates make)."""
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        # orjson writes integers of 64 bits at most, and JSON has no bound:
        # a capacity is (total - reserved) times a float ratio, up to about
        # 7e47, and upstream writes it whole.  Such an integer goes in as
        # its own text.  Any other failure is raised again below.
        return orjson.dumps(_wide_ints_as_text(body))


def _wide_ints_as_text(value: Any) -> Any:
    if type(value) is int:
        return value if -_INT64 <= value < _INT64 else orjson.Fragment(str(value))
    if type(value) is dict:
        return {k: _wide_ints_as_text(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return [_wide_ints_as_text(v) for v in value]
    return value


_INT64 = 2 ** 63


def fragment(body: Any) -> orjson.Fragment:
    """``body`` encoded, to be kept and embedded in later responses.

    orjson hands back its output in a buffer of at least 4 KB whatever the
    size of the JSON; a cache of thousands of small encodings would hold
    twenty times the memory they need.  The copy is exactly as long.
    """
    return orjson.Fragment(memoryview(dumps(body)).tobytes())


def set_cache_headers(
    req: falcon.Request,
    resp: falcon.Response,
    last_modified: datetime.datetime | None = None,
) -> None:
    if cache_headers_at(version_of(req)):
        _add_cache_headers(resp, last_modified)


def _add_cache_headers(resp: falcon.Response,
                       last_modified: datetime.datetime | None = None) -> None:
    resp.set_header("last-modified", http_date(last_modified))
    resp.set_header("cache-control", "no-cache")


_now_second = -1
_now_text = ""


def http_date(when: datetime.datetime | None = None) -> str:
    """``when`` (default now) as an HTTP date.  HTTP dates are to the second,
    so the current one is worded once a second, not once a request."""
    global _now_second, _now_text
    if when is None:
        second = int(time.time())
        if second != _now_second:
            _now_text = formatdate(second, usegmt=True)
            _now_second = second
        return _now_text
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return format_datetime(when.astimezone(datetime.UTC), usegmt=True)


def latest(*stamps: datetime.datetime | None) -> datetime.datetime | None:
    """The most recent of some created_at/updated_at values (None ignored)."""
    present = [s for s in stamps if s is not None]
    return max(present) if present else None


def no_content(resp: falcon.Response, status: int = 204) -> None:
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = None
    resp.text = None
    resp.data = None


def flatten_detail(text: str) -> str:
    """A detail as Placement's error pages carry it: one line, no markup.

    Placement passes each detail through its HTML-to-text step, so line
    breaks inside it (multi-line validation reports, for one) become spaces,
    ``<br>`` a line break, and anything tag-like disappears.
    """
    text = text.replace("\n", " ").replace("\r", "")
    text = _BREAK.sub("\n", text)
    text = _COMMENT.sub("", text)
    return _TAG.sub("", text)


def _formatted_detail(exc: errors.PlacementError, environ: dict) -> str:
    original = exc.detail
    if not isinstance(original, str):
        return exc.format_detail(environ)
    exc.detail = flatten_detail(original)
    try:
        return exc.format_detail(environ)
    finally:
        exc.detail = original


def error_body(
    exc: errors.PlacementError,
    environ: dict,
    version: tuple[int, int] | None,
) -> dict:
    """Placement's error document for one exception."""
    error: dict[str, Any] = {
        "status": exc.status,
        "title": exc.title,
        "detail": _formatted_detail(exc, environ),
    }
    if version is not None and version >= ERROR_CODE_VERSION:
        error["code"] = exc.code
    request_id = environ.get("openstack.request_id")
    if request_id:
        error["request_id"] = request_id
    if exc.status == 406 and version is None:
        # The version could not be negotiated: say what we do serve.
        error["max_version"] = microversion.max_version_string()
        error["min_version"] = microversion.min_version_string()
    return {"errors": [error]}


def error_answer(
    exc: errors.PlacementError,
    environ: dict,
    version: tuple[int, int] | None,
) -> tuple[str, bytes]:
    """Content type and body of the answer to ``exc``, in the form the
    request's ``Accept`` header asks for (see ``error_pages``)."""
    form = error_pages.negotiate(environ)
    if form == error_pages.JSON:
        return "application/json", dumps(error_body(exc, environ, version))
    if form == error_pages.HTML:
        text = error_pages.html_page(exc, environ)
    else:
        text = error_pages.plain_page(exc, _formatted_detail(exc, environ))
    return f"{form}; charset=UTF-8", text.encode("utf-8")
