"""Shared plumbing of the noun modules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import quote

from allotment.client._transports import Params, Response


class Requester(Protocol):
    """What a noun needs of the client: requests sent at a microversion.

    :class:`~allotment.client.PlacementClient` is one; typing the nouns
    against this rather than the client keeps the client's modules free of
    a circle (the client holds the nouns, the nouns do not know the client).
    """

    def version_for(self, version: str | None) -> str: ...

    def request(self, method: str, path: str, *, version: str | None = None,
                params: Params = None, json: Any = None,
                headers: Mapping[str, str] | None = None,
                ok: Iterable[int] = (200, 201, 204)) -> Response: ...

    def get(self, path: str, **kw: Any) -> Response: ...

    def put(self, path: str, json: Any = None, **kw: Any) -> Response: ...

    def post(self, path: str, json: Any = None, **kw: Any) -> Response: ...

    def delete(self, path: str, **kw: Any) -> Response: ...


class Noun:
    def __init__(self, client: Requester) -> None:
        self._client = client

    def _version(self, version: str | None) -> str:
        return self._client.version_for(version)


def seg(value: str) -> str:
    """One URL path segment."""
    return quote(str(value), safe="")


def csv(values) -> str:
    return ",".join(str(v) for v in values)


def member_of_values(member_of) -> list[str]:
    """``member_of`` as query values.

    A single string is passed through (``in:a,b``, ``!in:a,b``, a uuid); a
    list of strings or sets becomes one parameter each, sets rendered as
    ``in:`` lists (each parameter must match: AND of ORs).
    """
    if member_of is None:
        return []
    if isinstance(member_of, str):
        return [member_of]
    out = []
    for item in member_of:
        if isinstance(item, str):
            out.append(item)
        else:
            items = sorted(item)
            out.append(items[0] if len(items) == 1 else "in:" + csv(items))
    return out
