"""Load the provider world the candidate engine searches, in five queries.

The result is plain data (dicts keyed by provider id); the service turns it
into the engine's snapshot.  Only trees that could take part are loaded:
trees with inventory of a requested class, and trees holding sharing
providers.  Whole trees are loaded because provider summaries, same_subtree
and root_required all need the providers around the ones that allocate.
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

SHARES_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


def _relevant_roots(class_ids: Iterable[int]) -> sa.Select:
    rp = resource_providers
    with_inventory = (
        sa.select(rp.c.root_provider_id)
        .join(inventories, inventories.c.resource_provider_id == rp.c.id)
        .where(inventories.c.resource_class_id.in_(sorted(set(class_ids))))
    )
    sharing = (
        sa.select(rp.c.root_provider_id)
        .join(resource_provider_traits,
              resource_provider_traits.c.resource_provider_id == rp.c.id)
        .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
        .where(traits.c.name == SHARES_TRAIT)
    )
    return sa.union(with_inventory, sharing)


def load(conn: Connection, class_ids: Iterable[int] | None = None, *,
         with_usage: bool = True) -> dict[int, dict]:
    """Providers with their inventories (and usage), traits and aggregates.

    ``class_ids`` None loads every provider.  ``with_usage`` False leaves
    every ``used`` at 0 (for a cached static picture; see :func:`usage`).
    Returns
    ``{provider_id: {"uuid", "name", "generation", "parent_uuid",
    "root_uuid", "inventories": {rc: {..., "used"}}, "traits": set,
    "aggregates": set}}``.
    """
    rp = resource_providers
    parent = rp.alias("parent")
    root = rp.alias("root")
    query = (
        sa.select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation,
                  parent.c.uuid.label("parent_uuid"), root.c.uuid.label("root_uuid"))
        .select_from(rp)
        .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
        .outerjoin(root, root.c.id == rp.c.root_provider_id)
    )
    if class_ids is not None:
        roots = _relevant_roots(class_ids).subquery()
        query = query.where(rp.c.root_provider_id.in_(sa.select(roots.c.root_provider_id)))
    world: dict[int, dict] = {}
    for row in conn.execute(query):
        world[row.id] = {
            "uuid": row.uuid, "name": row.name, "generation": row.generation,
            "parent_uuid": row.parent_uuid, "root_uuid": row.root_uuid,
            "inventories": {}, "traits": set(), "aggregates": set(),
        }
    if not world:
        return world

    # The remaining queries filter on the same tree condition in SQL rather
    # than shipping a list of ids back to the server.
    in_world = rp.c.id.in_(query.with_only_columns(rp.c.id))

    inv_rows = conn.execute(
        sa.select(inventories, resource_classes.c.name.label("rc"))
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
        .join(rp, rp.c.id == inventories.c.resource_provider_id)
        .where(in_world))
    for row in inv_rows:
        world[row.resource_provider_id]["inventories"][row.rc] = {
            "total": row.total, "reserved": row.reserved, "min_unit": row.min_unit,
            "max_unit": row.max_unit, "step_size": row.step_size,
            "allocation_ratio": row.allocation_ratio, "used": 0,
        }

    usage_rows = () if not with_usage else conn.execute(
        sa.select(allocations.c.resource_provider_id, resource_classes.c.name,
                  sa.func.sum(allocations.c.used).label("used"))
        .join(resource_classes, resource_classes.c.id == allocations.c.resource_class_id)
        .join(rp, rp.c.id == allocations.c.resource_provider_id)
        .where(in_world)
        .group_by(allocations.c.resource_provider_id, resource_classes.c.name))
    for provider_id, rc, used in usage_rows:
        inv = world[provider_id]["inventories"].get(rc)
        if inv is not None:
            inv["used"] = int(used)

    trait_rows = conn.execute(
        sa.select(resource_provider_traits.c.resource_provider_id, traits.c.name)
        .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
        .join(rp, rp.c.id == resource_provider_traits.c.resource_provider_id)
        .where(in_world))
    for provider_id, name in trait_rows:
        world[provider_id]["traits"].add(name)

    agg_rows = conn.execute(
        sa.select(resource_provider_aggregates.c.resource_provider_id,
                  placement_aggregates.c.uuid)
        .join(placement_aggregates,
              placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id)
        .join(rp, rp.c.id == resource_provider_aggregates.c.resource_provider_id)
        .where(in_world))
    for provider_id, agg in agg_rows:
        world[provider_id]["aggregates"].add(agg)
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
