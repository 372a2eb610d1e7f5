"""Bounds on the size and shape of a request.

Placement's JSON schemas say what a valid request looks like; they say
nothing about how big a malformed one may be.  These bounds are checked
before any parsing that costs more than the bytes themselves, so a request
of any size or shape is answered quickly with a 4xx and never pins a worker:

* ``[oslo_middleware] max_request_body_size``: body bytes (413);
* ``[allotment] max_query_string_length``: query-string bytes (414);
* ``[allotment] max_query_parameters``: key=value pairs (400);
* ``[allotment] max_request_groups``: request groups in one query (400);
* ``[allotment] max_any_of_members``: members of one ``in:`` list (400);
* ``[allotment] max_json_depth``: nesting of a JSON body (400).

docs/limits.md describes them for operators.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import falcon
from oslo_config import cfg

from allotment import errors

# A request-group key: one of the grouped parameters and any suffix.  Looser
# than the candidates query schema on purpose: the count is taken before the
# schema runs, and every group-like key costs the parser the same.
_GROUP_KEY = re.compile(r"^(?:resources|required|member_of|in_tree)(.*)$")
_ANY_OF_PREFIXES = ("in:", "!in:")


@dataclass(frozen=True)
class Limits:
    body_bytes: int
    query_bytes: int
    query_parameters: int
    json_depth: int
    request_groups: int
    any_of_members: int

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> Limits:
        own = conf.allotment
        return cls(
            body_bytes=conf.oslo_middleware.max_request_body_size,
            query_bytes=own.max_query_string_length,
            query_parameters=own.max_query_parameters,
            json_depth=own.max_json_depth,
            request_groups=own.max_request_groups,
            any_of_members=own.max_any_of_members,
        )


class Middleware:
    """Falcon middleware refusing oversized requests before routing.

    Runs after the content checks (a non-integer Content-Length is their
    400) and puts the limits on ``req.context`` for the body and query
    parsers.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.limits = self.limits
        query = req.env.get("QUERY_STRING", "")
        if len(query) > self.limits.query_bytes:
            raise errors.RequestURITooLong(
                f"The query string is longer than max_query_string_length "
                f"({self.limits.query_bytes} bytes).")
        if "%" in query or not query.isascii():
            check_query_text(query)
        length = req.content_length
        if length is not None and length > self.limits.body_bytes:
            raise body_too_large(self.limits)


def check_query_text(query: str) -> None:
    """Refuse a query string that does not decode to NUL-free UTF-8.

    Checked for every route, also those that ignore their query string: such
    bytes are never meaningful, and some databases refuse them outright.
    """
    # PEP 3333 servers hand the raw bytes over as latin-1 text.
    try:
        raw = unquote_to_bytes(query.encode("latin-1"))
        text = raw.decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError) as exc:
        raise errors.BadRequest(
            f"Invalid query string parameters: not UTF-8 ({exc.reason})") from None
    if "\x00" in text:
        raise errors.BadRequest(
            "Invalid query string parameters: NUL characters are not allowed")


def of(req: falcon.Request) -> Limits:
    """The limits the middleware recorded for ``req``."""
    return req.context.limits


def body_too_large(limits: Limits) -> errors.RequestEntityTooLarge:
    return errors.RequestEntityTooLarge(
        f"Request is too large. Larger than max_request_body_size "
        f"({limits.body_bytes}).")


def check_query(pairs: Sequence[tuple[str, str]], limits: Limits) -> None:
    """Refuse a query with too many pairs, groups or ``in:`` members.

    Counting is linear in the pairs; the parsers after it may then afford
    work per group or per member.
    """
    bad = "Invalid query string parameters: "
    if len(pairs) > limits.query_parameters:
        raise errors.BadRequest(
            f"{bad}{len(pairs)} parameters are more than max_query_parameters "
            f"({limits.query_parameters}).",
            code=errors.QUERYPARAM_BAD_VALUE)
    suffixes = set()
    for key, value in pairs:
        match = _GROUP_KEY.match(key)
        if match is None:
            continue
        suffixes.add(match.group(1))
        if value.startswith(_ANY_OF_PREFIXES):
            members = value.count(",") + 1
            if members > limits.any_of_members:
                raise errors.BadRequest(
                    f"{bad}{key} lists {members} values, more than "
                    f"max_any_of_members ({limits.any_of_members}).",
                    code=errors.QUERYPARAM_BAD_VALUE)
    if len(suffixes) > limits.request_groups:
        raise errors.BadRequest(
            f"{bad}{len(suffixes)} request groups are more than "
            f"max_request_groups ({limits.request_groups}).",
            code=errors.QUERYPARAM_BAD_VALUE)


def _check_text(value: str) -> None:
    if "\x00" in value:
        raise errors.BadRequest("Malformed JSON: NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # A lone surrogate from a \\ud800 escape: no database can store it.
        raise errors.BadRequest(f"Malformed JSON: {exc}") from None


def check_document(data: Any, max_depth: int) -> None:
    """Refuse a decoded JSON document nested deeper than ``max_depth`` or
    holding text no database can store (NUL, lone surrogates).

    Iterative, so no document can exhaust the interpreter's stack here or in
    the schema validation that follows.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > max_depth:
            raise errors.BadRequest(
                f"Malformed JSON: nested deeper than max_json_depth ({max_depth}).")
        if isinstance(node, dict):
            for key, item in node.items():
                _check_text(key)
                stack.append((item, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in node)
