"""Usage of providers: sums of the allocations table per resource class."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage.tables import allocations, inventories, resource_classes


def by_provider(conn: Connection,
                provider_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """provider id -> {class name: amount allocated}; only classes with allocations."""
    ids = sorted(set(provider_ids))
    if not ids:
        return {}
    rows = conn.execute(
        sa.select(allocations.c.resource_provider_id, resource_classes.c.name,
                  sa.func.sum(allocations.c.used))
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .where(allocations.c.resource_provider_id.in_(ids))
        .group_by(allocations.c.resource_provider_id, resource_classes.c.name))
    result: dict[int, dict[str, int]] = {}
    for provider_id, name, used in rows:
        result.setdefault(provider_id, {})[name] = int(used or 0)
    return result


def for_provider(conn: Connection, provider_id: int) -> dict[str, int]:
    """Usage of every class the provider has inventory of (0 when unallocated).

    This is what GET /resource_providers/{uuid}/usages reports: allocations
    of a class without inventory are not shown, as upstream does.
    """
    used = (sa.select(allocations.c.resource_class_id,
                      sa.func.sum(allocations.c.used).label("used"))
            .where(allocations.c.resource_provider_id == provider_id)
            .group_by(allocations.c.resource_class_id).subquery())
    rows = conn.execute(
        sa.select(resource_classes.c.name, sa.func.coalesce(used.c.used, 0))
        .select_from(
            inventories
            .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
            .outerjoin(used, used.c.resource_class_id == inventories.c.resource_class_id))
        .where(inventories.c.resource_provider_id == provider_id)
        .order_by(inventories.c.resource_class_id))
    return {name: int(amount) for name, amount in rows}
