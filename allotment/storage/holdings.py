"""SQL for what some consumers hold, with who they are: the reads behind
the what-if extensions of GET /allocation_candidates (engine.whatif)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage.tables import (
    allocations,
    consumer_types,
    consumers,
    projects,
    resource_classes,
    resource_providers,
    users,
)

_HELD = sa.select(
    consumers.c.uuid.label("consumer_uuid"),
    consumers.c.generation.label("consumer_generation"),
    projects.c.external_id.label("project_id"),
    users.c.external_id.label("user_id"),
    consumer_types.c.name.label("consumer_type"),
    resource_providers.c.uuid.label("provider_uuid"),
    resource_classes.c.name.label("resource_class"),
    allocations.c.used,
).select_from(
    consumers.join(projects, consumers.c.project_id == projects.c.id)
    .join(users, consumers.c.user_id == users.c.id)
    .outerjoin(consumer_types, consumers.c.consumer_type_id == consumer_types.c.id)
    # Outer: a consumer that exists but holds nothing is still known.
    .outerjoin(allocations, allocations.c.consumer_id == consumers.c.uuid)
    .outerjoin(resource_providers,
               allocations.c.resource_provider_id == resource_providers.c.id)
    .outerjoin(resource_classes, allocations.c.resource_class_id == resource_classes.c.id)
).order_by(consumers.c.uuid, allocations.c.id)


def of_consumers(conn: Connection, consumer_uuids: Iterable[str]) -> list[Row]:
    """One row per allocation of the given consumers (one row with no
    provider for a consumer holding nothing): consumer_uuid,
    consumer_generation, project_id, user_id, consumer_type (None:
    unknown), provider_uuid, resource_class, used."""
    ids = sorted(set(consumer_uuids))
    if not ids:
        return []
    return list(conn.execute(_HELD.where(consumers.c.uuid.in_(ids))))


def of_consumer_types(conn: Connection, type_names: Iterable[str]) -> list[Row]:
    """:func:`of_consumers` for every consumer of one of the given types
    that holds something."""
    names = sorted(set(type_names))
    if not names:
        return []
    return list(conn.execute(_HELD.where(consumer_types.c.name.in_(names),
                                         allocations.c.id.isnot(None))))


def of_consumer_types_on(conn: Connection, type_names: Iterable[str],
                         provider_uuids: Iterable[str]) -> list[Row]:
    """:func:`of_consumer_types` for the consumers holding something on one
    of the given providers (every allocation of theirs, wherever it is)."""
    names = sorted(set(type_names))
    uuids = sorted(set(provider_uuids))
    found: list[Row] = []
    # Chunks: a large change names thousands of providers.
    for start in range(0, len(uuids) if names else 0, 500):
        on = sa.select(allocations.c.consumer_id).select_from(
            allocations.join(resource_providers,
                             allocations.c.resource_provider_id == resource_providers.c.id)
        ).where(resource_providers.c.uuid.in_(uuids[start:start + 500]))
        found.extend(conn.execute(_HELD.where(consumer_types.c.name.in_(names),
                                              allocations.c.id.isnot(None),
                                              consumers.c.uuid.in_(on))))
    return found


def usage_of_consumer_types(conn: Connection, type_names: Iterable[str]) -> list[tuple[str, int]]:
    """(resource class, amount) held by the consumers of the given types,
    over every provider, by class name."""
    names = sorted(set(type_names))
    if not names:
        return []
    query = sa.select(
        resource_classes.c.name, sa.func.sum(allocations.c.used),
    ).select_from(
        allocations.join(consumers, allocations.c.consumer_id == consumers.c.uuid)
        .join(consumer_types, consumers.c.consumer_type_id == consumer_types.c.id)
        .join(resource_classes, allocations.c.resource_class_id == resource_classes.c.id)
    ).where(consumer_types.c.name.in_(names)).group_by(
        resource_classes.c.name).order_by(resource_classes.c.name)
    return [(rc, int(used)) for rc, used in conn.execute(query)]
