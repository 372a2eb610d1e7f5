"""The answers the in-memory world gives, worked out again in SQL from the tables.

``GET /resource_providers`` and ``GET /resource_providers/{uuid}/usages`` are
answered by the product from the world (``service.provider_listing``); the
functions here read the same answers straight from the database, so tests
can check one against the other.  They are oracles, not product code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.service.resource_providers import ProviderFilters, require
from allotment.storage import inventories as inventory_store
from allotment.storage import resource_providers as providers
from allotment.storage import traits as trait_store
from allotment.storage.db import Database
from allotment.storage.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_classes,
    resource_provider_aggregates,
    resource_provider_traits,
)


def get_usages_from_database(db: Database, uuid: str) -> tuple[int, dict[str, int]]:
    """The provider's generation and its usage of every class it has
    inventory of, read from the tables (what ``get_usages`` answers from the
    world); ProviderNotFound as the service raises it."""
    with db.read() as conn:
        row = require(conn, uuid)
        return row.generation, usage_of_provider(conn, row.id)


def _trait_ids(conn: Connection, names: list[str]) -> dict[str, int]:
    known = trait_store.ids_for(conn, names)
    for name in names:
        if name not in known:
            raise errors.BadRequest(
                f'Invalid trait(s) in "required" parameter: No such trait(s): {name}.')
    return known


def list_providers_from_database(db: Database, filters: ProviderFilters) -> list[Row]:
    """Providers matching every filter, read from the database.

    What ``service.resource_providers.list_providers`` answers from the
    in-memory world, worked out in SQL; tests compare the two.

    Checks run in upstream's order, so a filter that already rules everything
    out (an unknown in_tree provider, traits nobody has) answers an empty list
    before later filters are examined.
    """
    with db.read() as conn:
        root_id = None
        if filters.in_tree is not None:
            tree = providers.get_by_uuid(conn, filters.in_tree)
            if tree is None:
                return []
            root_id = tree.root_provider_id
        required: list[set[int]] = []
        for any_of in filters.required_traits:
            ids = _trait_ids(conn, sorted(any_of))
            required.append(set(ids.values()))
        if required and not _list_filtered(conn, required_trait_ids=required):
            return []  # nobody has them: later names are not looked up
        forbidden = set(_trait_ids(conn, sorted(filters.forbidden_traits)).values())
        if filters.member_of and not _list_filtered(conn, member_of=filters.member_of):
            return []
        resources: dict[int, int] = {}
        if filters.resources:
            class_ids = inventory_store.class_ids(conn, filters.resources)
            for name in filters.resources:
                if name not in class_ids:
                    raise errors.BadRequest(
                        "Invalid resource class in resources parameter: No such "
                        f"resource class {name}.")
            if any(a > inventory_store.MAX_INT for a in filters.resources.values()):
                return []  # no inventory can hold that much
            resources = {class_ids[name]: a for name, a in filters.resources.items()}
        return _list_filtered(
            conn, name=filters.name, uuid=filters.uuid, root_id=root_id,
            member_of=filters.member_of,
            forbidden_aggregates=filters.forbidden_aggregates,
            required_trait_ids=required, forbidden_trait_ids=forbidden,
            resources=resources)


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


def _list_filtered(
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


def usage_of_provider(conn: Connection, provider_id: int) -> dict[str, int]:
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
