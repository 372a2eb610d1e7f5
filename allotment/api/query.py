"""Query-string helpers shared by the listing endpoints."""

from __future__ import annotations

from urllib.parse import parse_qsl

import falcon

from allotment import errors
from allotment.api import limits


def pairs(req: falcon.Request) -> list[tuple[str, str]]:
    """Every key/value pair in order, repeats and blank values kept."""
    try:
        result = parse_qsl(req.query_string, keep_blank_values=True,
                           strict_parsing=False, errors="strict",
                           max_num_fields=None)
    except UnicodeDecodeError as exc:
        raise errors.BadRequest(f"Invalid query string parameters: {exc}") from None
    if any("\x00" in key or "\x00" in value for key, value in result):
        # No stored name holds a NUL, and some databases refuse one outright.
        raise errors.BadRequest(
            "Invalid query string parameters: NUL characters are not allowed")
    limits.check_query(result, limits.of(req))
    return result


def last_values(req: falcon.Request, allowed: set[str]) -> dict[str, str]:
    """One value per key (the last, as webob's ``req.GET[key]`` gives).

    Unknown keys are refused the way upstream's query schemas refuse them.
    """
    result: dict[str, str] = {}
    for key, value in pairs(req):
        if key not in allowed:
            raise errors.BadRequest(
                "Invalid query string parameters: Additional properties are "
                f"not allowed ('{key}' was unexpected)")
        result[key] = value
    return result
