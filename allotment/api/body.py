"""Request bodies: content type, JSON parsing and jsonschema validation."""

from __future__ import annotations

import json
import uuid as uuid_mod
from typing import Any

import falcon
import jsonschema

from allotment import errors

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


def json_body(req: falcon.Request, schema: dict | None = None) -> Any:
    """The request's JSON document, validated against ``schema``."""
    require_json(req)
    raw = req.bounded_stream.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.BadRequest(f"Malformed JSON: {exc}") from None
    if schema is not None:
        validate(data, schema)
    return data


def validate(data: Any, schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(schema, format_checker=FORMAT_CHECKER)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        location = f" (at '{where}')" if where else ""
        raise errors.BadRequest(f"JSON does not validate: {error.message}{location}")
