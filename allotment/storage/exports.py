"""Bulk reads for what /metrics exports beyond the in-memory world."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import consumer_join
from allotment.storage.tables import (
    allocations,
    consumers,
    placement_changes,
    resource_classes,
    resource_providers,
)


def consumer_allocations(conn: Connection) -> Iterator[tuple[str, str, str, int]]:
    """Every allocation as ``(provider name, consumer UUID, class name, used)``,
    in one statement, ordered by provider name, consumer and class."""
    query = (
        sa.select(resource_providers.c.name, consumers.c.uuid,
                  resource_classes.c.name, allocations.c.used)
        .select_from(
            allocations
            .join(resource_providers,
                  allocations.c.resource_provider_id == resource_providers.c.id)
            .join(consumers, consumer_join.condition())
            .join(resource_classes,
                  allocations.c.resource_class_id == resource_classes.c.id))
        .order_by(resource_providers.c.name, consumers.c.uuid, resource_classes.c.name))
    for name, consumer, rc, used in conn.execute(query):
        yield name, consumer, rc, int(used)


def feed_behind(conn: Connection, head: int
                ) -> tuple[int, datetime.datetime | None]:
    """How many change-feed rows are past ``head``, and when the oldest of
    them was written (None when there is none)."""
    count, oldest = conn.execute(
        sa.select(sa.func.count(), sa.func.min(placement_changes.c.created_at))
        .where(placement_changes.c.id > head)).one()
    return int(count or 0), oldest
