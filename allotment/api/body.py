"""Request bodies: content type, JSON parsing and jsonschema validation.

Errors are worded as Placement words them: ``Malformed JSON: ...`` and
``JSON does not validate: <jsonschema's full report>``, which clients and
operators grep for.
"""

from __future__ import annotations

import json
import uuid as uuid_mod
from collections.abc import Callable
from typing import Any

import falcon
import jsonschema

from allotment import errors
from allotment.api import limits
from allotment.api.schema import first_error

JSON = "application/json"

FORMAT_CHECKER = jsonschema.FormatChecker()


@FORMAT_CHECKER.checks("uuid")
def _is_uuid_like(value: object) -> bool:
    """Accept what upstream accepts: any spelling that parses as a UUID."""
    if not isinstance(value, str):
        return True
    try:
        parsed = uuid_mod.UUID(value)
    except ValueError:
        return False
    canonical = value.lower()
    for noise in ("urn:", "uuid:", "{", "}", "-"):
        canonical = canonical.replace(noise, "")
    return parsed.hex == canonical


def require_json(req: falcon.Request) -> None:
    if req.content_type is None or req.content_type.split(";")[0].strip().lower() != JSON:
        shown = req.content_type.split(";")[0].strip() if req.content_type else "None"
        raise errors.UnsupportedMediaType(
            f"The media type {shown} is not supported, use {JSON}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON number")


def _body_stream(req: falcon.Request) -> Any:
    # A chunked body has no Content-Length; a server that says its input
    # stream ends where the body ends (PEP 3333's wsgi.input_terminated, as
    # gunicorn does) can be read to its end, as upstream reads it.
    if req.content_length is None and req.env.get("wsgi.input_terminated"):
        return req.stream
    return req.bounded_stream


def json_body(req: falcon.Request, schema: dict | None = None) -> Any:
    """The request's JSON document, validated against ``schema``.

    NaN and Infinity are not JSON and are refused like any syntax error.
    The body is read only up to the size limit, and checked for depth and
    storable text before the schema sees it.
    """
    require_json(req)
    bounds = limits.of(req)
    raw = _body_stream(req).read(bounds.body_bytes + 1)
    if len(raw) > bounds.body_bytes:
        raise limits.body_too_large(bounds)
    try:
        # Integers of more than 4300 digits raise ValueError here too.
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from None
    limits.check_document(data, bounds.json_depth)
    if schema is not None:
        validate(data, schema)
    return data


def json_body_after(req: falcon.Request, schema: dict | None,
                    look_up: Callable[[], object]) -> Any:
    """json_body, with a bad body reported only after ``look_up()`` had its say.

    Placement answers 404 for an unknown provider before it reads the body.
    The write that follows a good body looks the provider up again anyway,
    so only a bad body pays for a separate lookup.
    """
    try:
        return json_body(req, schema)
    except errors.BadRequest:
        look_up()
        raise


def validate(data: Any, schema: dict) -> None:
    error = first_error(data, schema, format_checker=FORMAT_CHECKER)
    if error is not None:
        raise errors.BadRequest(f"JSON does not validate: {error}")
