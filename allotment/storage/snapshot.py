"""Load the provider world the candidate engine searches, in a few queries.

:func:`load` reads the static picture (providers, trees, inventories,
traits, aggregates) that the service caches per topology version;
:func:`usage` reads what is allocated, on every request.  The result is
plain data; the service turns it into the engine's snapshot.
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


def load(conn: Connection) -> dict[int, dict]:
    """Every provider with its inventories, traits and aggregates.

    Returns ``{provider_id: {"uuid", "name", "generation", "parent_uuid",
    "root_uuid", "inventories": {rc: (total, reserved, min_unit, max_unit,
    step_size, allocation_ratio)}, "traits": set, "aggregates": set}}``.
    Rows are unpacked positionally: at 100,000 rows and more, attribute
    access on result rows is a measurable share of a cache rebuild.
    """
    rp = resource_providers
    parent = rp.alias("parent")
    root = rp.alias("root")
    rows = conn.execute(
        sa.select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation,
                  parent.c.uuid, root.c.uuid)
        .select_from(rp)
        .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
        .outerjoin(root, root.c.id == rp.c.root_provider_id))
    world: dict[int, dict] = {
        pid: {"uuid": uuid, "name": name, "generation": generation,
              "parent_uuid": parent_uuid, "root_uuid": root_uuid,
              "inventories": {}, "traits": set(), "aggregates": set()}
        for pid, uuid, name, generation, parent_uuid, root_uuid in rows}
    if not world:
        return world

    inv = inventories
    rows = conn.execute(
        sa.select(inv.c.resource_provider_id, resource_classes.c.name,
                  *(inv.c[f] for f in INVENTORY_FIELDS))
        .join(resource_classes, resource_classes.c.id == inv.c.resource_class_id))
    for pid, rc, *fields in rows:
        world[pid]["inventories"][rc] = tuple(fields)

    rows = conn.execute(
        sa.select(resource_provider_traits.c.resource_provider_id, traits.c.name)
        .join(traits, traits.c.id == resource_provider_traits.c.trait_id))
    for pid, name in rows:
        world[pid]["traits"].add(name)

    rows = conn.execute(
        sa.select(resource_provider_aggregates.c.resource_provider_id,
                  placement_aggregates.c.uuid)
        .join(placement_aggregates,
              placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id)
    )
    for pid, agg in rows:
        world[pid]["aggregates"].add(agg)
    return world


def usage(conn: Connection, class_ids: Iterable[int] | None = None
          ) -> list[tuple[int, int, int]]:
    """``(provider id, class id, used)`` for every allocated pair.

    One GROUP BY over allocations, answered from the (provider, class)
    index; ``class_ids`` restricts it to some classes.
    """
    query = (
        sa.select(allocations.c.resource_provider_id,
                  allocations.c.resource_class_id,
                  sa.func.sum(allocations.c.used))
        .group_by(allocations.c.resource_provider_id,
                  allocations.c.resource_class_id))
    if class_ids is not None:
        query = query.where(allocations.c.resource_class_id.in_(sorted(set(class_ids))))
    return [(p, c, int(used)) for p, c, used in conn.execute(query)]


def class_names(conn: Connection) -> dict[int, str]:
    """Every resource class, by id."""
    return dict(conn.execute(sa.select(resource_classes.c.id, resource_classes.c.name)).all())


def trait_ids(conn: Connection) -> dict[str, int]:
    """Every trait name with its id."""
    return dict(conn.execute(sa.select(traits.c.name, traits.c.id)).all())


def existing_names(conn: Connection, class_names: Iterable[str],
                   trait_names: Iterable[str]) -> tuple[set[str], set[str]]:
    """Which of the named resource classes and traits exist."""
    found_classes: set[str] = set()
    found_traits: set[str] = set()
    wanted = sorted(set(class_names))
    if wanted:
        found_classes = set(conn.execute(
            sa.select(resource_classes.c.name)
            .where(resource_classes.c.name.in_(wanted))).scalars())
    wanted = sorted(set(trait_names))
    if wanted:
        found_traits = set(conn.execute(
            sa.select(traits.c.name).where(traits.c.name.in_(wanted))).scalars())
    return found_classes, found_traits
