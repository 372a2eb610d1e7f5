"""How an allocation row names its consumer, in one place.

Reads that put allocations next to their consumers (the audit, the
exported per-consumer allocations) join through :func:`condition` only.
Upstream Placement's schema keeps the consumer's UUID in
``allocations.consumer_id``; an earlier allotment schema kept the
consumer's row id there.  The column's type says which.
"""

from __future__ import annotations

import sqlalchemy as sa

from allotment.storage.tables import allocations, consumers


def by_uuid() -> bool:
    """Whether ``allocations.consumer_id`` holds the consumer's UUID."""
    return isinstance(allocations.c.consumer_id.type, sa.String)


def consumer_key_of_consumers() -> sa.ColumnElement:
    """The consumers column whose values ``allocations.consumer_id`` holds."""
    return consumers.c.uuid if by_uuid() else consumers.c.id


def condition() -> sa.ColumnElement[bool]:
    """The join condition of an allocation and its consumer."""
    return allocations.c.consumer_id == consumer_key_of_consumers()


def consumer_key() -> sa.ColumnElement:
    """The allocation column that names its consumer (for anti-joins)."""
    return allocations.c.consumer_id
