"""Shared plumbing of the noun modules."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from allotment.client.api import PlacementClient


class Noun:
    def __init__(self, client: PlacementClient) -> None:
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
