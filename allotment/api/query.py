"""Query-string helpers shared by the listing endpoints."""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl

import falcon

from allotment import errors
from allotment.api import limits


def pairs(req: falcon.Request) -> list[tuple[str, str]]:
    """Every key/value pair in order, repeats and blank values kept."""
    return list(frozen_pairs(req))


def frozen_pairs(req: falcon.Request) -> tuple[tuple[str, str], ...]:
    """:func:`pairs` as a tuple, which callers may keep or use as a key."""
    return _pairs(req.query_string, limits.of(req))


@functools.lru_cache(maxsize=256)
def _pairs(query_string: str, bounds: limits.Limits) -> tuple[tuple[str, str], ...]:
    # A pure function of the query string and the limits, and clients ask
    # the same few queries over and over.  Refusals raise and are not kept.
    try:
        result = parse_qsl(query_string, keep_blank_values=True,
                           strict_parsing=False, errors="strict",
                           max_num_fields=None)
    except UnicodeDecodeError as exc:
        raise errors.BadRequest(f"Invalid query string parameters: {exc}") from None
    if any("\x00" in key or "\x00" in value for key, value in result):
        # No stored name holds a NUL, and some databases refuse one outright.
        raise errors.BadRequest(
            "Invalid query string parameters: NUL characters are not allowed")
    limits.check_query(result, bounds)
    return tuple(result)


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
