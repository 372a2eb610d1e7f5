"""SQL for the traits a resource provider has."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage.db import utcnow
from allotment.storage.tables import resource_provider_traits, traits
from allotment.storage.topology import bump_topology

LINK = resource_provider_traits


def for_provider(conn: Connection, provider_id: int) -> list[Row]:
    """The provider's trait rows (id, name, created_at, updated_at) by name."""
    return list(conn.execute(
        sa.select(traits.c.id, traits.c.name, traits.c.created_at, traits.c.updated_at)
        .join(LINK, LINK.c.trait_id == traits.c.id)
        .where(LINK.c.resource_provider_id == provider_id).order_by(traits.c.name)))


def for_providers(conn: Connection, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    ids = sorted(set(provider_ids))
    if not ids:
        return {}
    result: dict[int, set[str]] = {}
    for provider_id, name in conn.execute(
            sa.select(LINK.c.resource_provider_id, traits.c.name)
            .join(traits, LINK.c.trait_id == traits.c.id)
            .where(LINK.c.resource_provider_id.in_(ids))):
        result.setdefault(provider_id, set()).add(name)
    return result


def replace(conn: Connection, provider_id: int, trait_ids: Iterable[int]) -> None:
    """Make ``trait_ids`` the provider's exact set of traits."""
    wanted = set(trait_ids)
    current = {t for (t,) in conn.execute(
        sa.select(LINK.c.trait_id).where(LINK.c.resource_provider_id == provider_id))}
    gone = sorted(current - wanted)
    if gone:
        conn.execute(sa.delete(LINK).where(LINK.c.resource_provider_id == provider_id,
                                           LINK.c.trait_id.in_(gone)))
    added = sorted(wanted - current)
    if added:
        now = utcnow()
        conn.execute(sa.insert(LINK), [
            {"resource_provider_id": provider_id, "trait_id": t, "created_at": now}
            for t in added])
    if gone or added:
        bump_topology(conn)
