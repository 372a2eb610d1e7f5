"""SQL for listing resource providers by the filters of
``GET /resource_providers`` (name, uuid, tree, traits, aggregates, room
for resources), answered from the database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import resource_providers as providers
from allotment.storage.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_provider_aggregates,
    resource_provider_traits,
)

TABLE = providers.TABLE


def _with_any_aggregate(agg_uuids: Iterable[str]) -> sa.Select:
    """Ids of providers in at least one of the aggregates."""
    return (sa.select(resource_provider_aggregates.c.resource_provider_id)
            .join(placement_aggregates,
                  placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id)
            .where(placement_aggregates.c.uuid.in_(sorted(agg_uuids))))


def _with_any_trait(trait_ids: Iterable[int]) -> sa.Select:
    return (sa.select(resource_provider_traits.c.resource_provider_id)
            .where(resource_provider_traits.c.trait_id.in_(sorted(trait_ids))))


def _with_capacity(class_id: int, amount: int) -> sa.Select:
    """Ids of providers that could take ``amount`` more of the class now."""
    used = (sa.select(allocations.c.resource_provider_id,
                      sa.func.sum(allocations.c.used).label("used"))
            .where(allocations.c.resource_class_id == class_id)
            .group_by(allocations.c.resource_provider_id).subquery())
    inv = inventories
    return (
        sa.select(inv.c.resource_provider_id)
        .select_from(inv.outerjoin(used, used.c.resource_provider_id
                                   == inv.c.resource_provider_id))
        .where(inv.c.resource_class_id == class_id,
               sa.func.coalesce(used.c.used, 0) + amount
               <= (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
               inv.c.min_unit <= amount,
               inv.c.max_unit >= amount,
               (amount % inv.c.step_size) == 0))


def list_filtered(
    conn: Connection,
    *,
    name: str | None = None,
    uuid: str | None = None,
    root_id: int | None = None,
    member_of: Iterable[Iterable[str]] = (),
    forbidden_aggregates: Iterable[str] = (),
    required_trait_ids: Iterable[Iterable[int]] = (),
    forbidden_trait_ids: Iterable[int] = (),
    resources: Mapping[int, int] | None = None,
) -> list[Row]:
    """Providers matching every filter given.

    ``member_of`` and ``required_trait_ids`` are lists of any-of sets (all
    sets must match); ``resources`` maps resource class ids to amounts the
    provider must still have room for.
    """
    query = providers.rows_select()
    if name is not None:
        query = query.where(TABLE.c.name == name)
    if uuid is not None:
        query = query.where(TABLE.c.uuid == uuid)
    if root_id is not None:
        query = query.where(TABLE.c.root_provider_id == root_id)
    for any_traits in required_trait_ids:
        query = query.where(TABLE.c.id.in_(_with_any_trait(any_traits)))
    forbidden_trait_ids = set(forbidden_trait_ids)
    if forbidden_trait_ids:
        query = query.where(TABLE.c.id.not_in(_with_any_trait(forbidden_trait_ids)))
    for any_aggs in member_of:
        query = query.where(TABLE.c.id.in_(_with_any_aggregate(any_aggs)))
    forbidden_aggregates = set(forbidden_aggregates)
    if forbidden_aggregates:
        query = query.where(TABLE.c.id.not_in(_with_any_aggregate(forbidden_aggregates)))
    for class_id, amount in (resources or {}).items():
        query = query.where(TABLE.c.id.in_(_with_capacity(class_id, amount)))
    return list(conn.execute(query.order_by(TABLE.c.id)))
