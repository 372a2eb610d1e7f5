"""How an allocation row names its consumer, in one place.

Reads that put allocations next to their consumers (the audit, the
exported per-consumer allocations) join through :func:`condition` only, so
a schema where ``allocations.consumer_id`` holds the consumer's UUID
instead of its row id changes this module and nothing else.
"""

from __future__ import annotations

import sqlalchemy as sa

from allotment.storage.tables import allocations, consumers


def condition() -> sa.ColumnElement[bool]:
    """The join condition of an allocation and its consumer."""
    return allocations.c.consumer_id == consumers.c.id


def consumer_key() -> sa.ColumnElement:
    """The allocation column that names its consumer (for anti-joins)."""
    return allocations.c.consumer_id


def consumer_key_of_consumers() -> sa.ColumnElement:
    """The consumers column :func:`consumer_key` holds values of."""
    return consumers.c.id
