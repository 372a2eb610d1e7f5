"""Read the provider world the API processes keep in memory.

:func:`load` reads providers with their inventories, traits and aggregates
-- every provider, or only the trees with some roots, which is how a process
catches up with the trees the change feed says changed.  :func:`usage`
reads what is allocated, once, when a process loads everything; afterwards
usage moves by the feed's deltas.  The results are plain data; the world
model (``allotment.world``) turns them into the engine's snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_classes,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
    traits,
)

# Positions of an inventory's fields in the tuples :func:`load` returns.
INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                    "allocation_ratio")

_RP = resource_providers
_PARENT = _RP.alias("parent")
_ROOT = _RP.alias("root")
_ROOTS = sa.bindparam("roots", expanding=True)
_IN_TREES = _RP.c.root_provider_id.in_(_ROOTS)

_PROVIDERS = (
    sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation, _PARENT.c.uuid,
              _ROOT.c.uuid, _RP.c.root_provider_id, _RP.c.created_at, _RP.c.updated_at)
    .select_from(_RP)
    .outerjoin(_PARENT, _PARENT.c.id == _RP.c.parent_provider_id)
    .outerjoin(_ROOT, _ROOT.c.id == _RP.c.root_provider_id))
_INVENTORIES = (
    sa.select(inventories.c.resource_provider_id, resource_classes.c.name,
              *(inventories.c[f] for f in INVENTORY_FIELDS))
    .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id))
_TRAITS = (
    sa.select(resource_provider_traits.c.resource_provider_id, traits.c.name)
    .join(traits, traits.c.id == resource_provider_traits.c.trait_id))
_AGGREGATES = (
    sa.select(resource_provider_aggregates.c.resource_provider_id, placement_aggregates.c.uuid)
    .join(placement_aggregates,
          placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id))


def _in_trees(query: sa.Select, provider_column: sa.Column) -> sa.Select:
    return query.join(_RP, _RP.c.id == provider_column).where(_IN_TREES)


_TREE_PROVIDERS = _PROVIDERS.where(_IN_TREES)
_TREE_INVENTORIES = _in_trees(_INVENTORIES, inventories.c.resource_provider_id)
_TREE_TRAITS = _in_trees(_TRAITS, resource_provider_traits.c.resource_provider_id)
_TREE_AGGREGATES = _in_trees(_AGGREGATES, resource_provider_aggregates.c.resource_provider_id)


# Ids bound into one IN list at most: SQLite takes at most 32,766 bound
# parameters in a statement and PostgreSQL's protocol 65,535, and a process
# catching up after a bulk load may have that many trees or providers to read.
IN_LIST_MAX = 10_000


def _batches(ids: Iterable[int]) -> list[list[int]]:
    ordered = sorted(set(ids))
    return [ordered[i:i + IN_LIST_MAX] for i in range(0, len(ordered), IN_LIST_MAX)]


def load(conn: Connection, root_ids: Iterable[int] | None = None) -> dict[int, dict]:
    """Providers with their inventories, traits and aggregates.

    Every provider, or with ``root_ids`` only the members of the trees with
    those roots *now* (a root that no longer exists contributes nothing).
    Returns ``{provider_id: {"uuid", "name", "generation", "parent_uuid",
    "root_uuid", "root_id", "created_at", "updated_at", "inventories": {rc:
    (total, reserved, min_unit, max_unit, step_size, allocation_ratio)},
    "traits": set, "aggregates": set}}``.  Rows are unpacked positionally:
    at 100,000 rows and more, attribute access on result rows is a
    measurable share of a full load.
    """
    if root_ids is None:
        return _load(conn, (_PROVIDERS, _INVENTORIES, _TRAITS, _AGGREGATES), {})
    world: dict[int, dict] = {}
    for roots in _batches(root_ids):
        # Trees do not share providers: the batches' worlds are disjoint.
        world.update(_load(conn, (_TREE_PROVIDERS, _TREE_INVENTORIES, _TREE_TRAITS,
                                  _TREE_AGGREGATES), {"roots": roots}))
    return world


def _load(conn: Connection, queries: tuple, params: dict) -> dict[int, dict]:
    providers_q, inventories_q, traits_q, aggregates_q = queries
    world: dict[int, dict] = {
        pid: {"uuid": uuid, "name": name, "generation": generation,
              "parent_uuid": parent_uuid, "root_uuid": root_uuid, "root_id": root_id,
              "created_at": created_at, "updated_at": updated_at,
              "inventories": {}, "traits": set(), "aggregates": set()}
        for pid, uuid, name, generation, parent_uuid, root_uuid, root_id, created_at,
        updated_at in conn.execute(providers_q, params)}
    if not world:
        return world
    for pid, rc, *fields in conn.execute(inventories_q, params):
        world[pid]["inventories"][rc] = tuple(fields)
    for pid, name in conn.execute(traits_q, params):
        world[pid]["traits"].add(name)
    for pid, agg in conn.execute(aggregates_q, params):
        world[pid]["aggregates"].add(agg)
    return world


_USAGE = (
    sa.select(allocations.c.resource_provider_id, allocations.c.resource_class_id,
              sa.func.sum(allocations.c.used))
    .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id))


_PROVIDERS_USAGE = _USAGE.where(
    allocations.c.resource_provider_id.in_(sa.bindparam("ids", expanding=True)))


def usage(conn: Connection, provider_ids: Iterable[int] | None = None
          ) -> list[tuple[int, int, int]]:
    """``(provider id, class id, used)`` for every allocated pair (of the
    providers ``provider_ids``, if given).

    One GROUP BY over allocations, answered from the (provider, class) index.
    """
    if provider_ids is None:
        return [(p, c, int(used)) for p, c, used in conn.execute(_USAGE)]
    return [(p, c, int(used)) for ids in _batches(provider_ids)
            for p, c, used in conn.execute(_PROVIDERS_USAGE, {"ids": ids})]


_CLASSES = sa.select(resource_classes.c.id, resource_classes.c.name)
_TRAIT_IDS = sa.select(traits.c.name, traits.c.id)


def class_names(conn: Connection) -> dict[int, str]:
    """Every resource class, by id."""
    return dict(conn.execute(_CLASSES).all())


def trait_ids(conn: Connection) -> dict[str, int]:
    """Every trait name with its id."""
    return dict(conn.execute(_TRAIT_IDS).all())
