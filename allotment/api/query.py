"""Query-string helpers shared by the listing endpoints."""

from __future__ import annotations

from urllib.parse import parse_qsl

import falcon

from allotment import errors


def pairs(req: falcon.Request) -> list[tuple[str, str]]:
    """Every key/value pair in order, repeats and blank values kept."""
    try:
        return parse_qsl(req.query_string, keep_blank_values=True,
                         strict_parsing=False, errors="strict")
    except UnicodeDecodeError as exc:
        raise errors.BadRequest(f"Invalid query string parameters: {exc}") from None


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
