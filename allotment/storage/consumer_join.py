"""How an allocation row names its consumer, in one place.

Reads that put allocations next to their consumers (the audit, the
exported per-consumer allocations) join through :func:`condition` only.
Upstream Placement's schema, which is allotment's, keeps the consumer's
UUID in ``allocations.consumer_id``.
"""

from __future__ import annotations

import sqlalchemy as sa

from allotment.storage.tables import allocations, consumers


def consumer_key_of_consumers() -> sa.ColumnElement:
    """The consumers column whose values ``allocations.consumer_id`` holds."""
    return consumers.c.uuid


def condition() -> sa.ColumnElement[bool]:
    """The join condition of an allocation and its consumer."""
    return allocations.c.consumer_id == consumer_key_of_consumers()


def consumer_key() -> sa.ColumnElement:
    """The allocation column that names its consumer (for anti-joins)."""
    return allocations.c.consumer_id
