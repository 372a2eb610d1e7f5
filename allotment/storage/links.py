"""SQL shared by the provider link tables: traits and aggregates of providers."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import feed
from allotment.storage.db import utcnow


def replace(conn: Connection, link: sa.Table, column: str, provider_id: int,
            wanted_ids: Iterable[int]) -> bool:
    """Make ``wanted_ids`` the provider's exact set of linked ids.

    Only the difference is written, and the change is noted for the feed
    only when something changed; tells whether it did.
    """
    target = link.c[column]
    wanted = set(wanted_ids)
    current = set(conn.execute(
        sa.select(target).where(link.c.resource_provider_id == provider_id)).scalars())
    gone = sorted(current - wanted)
    if gone:
        conn.execute(sa.delete(link).where(link.c.resource_provider_id == provider_id,
                                           target.in_(gone)))
    added = sorted(wanted - current)
    if added:
        now = utcnow()
        conn.execute(sa.insert(link), [
            {"resource_provider_id": provider_id, column: linked, "created_at": now}
            for linked in added])
    changed = bool(gone or added)
    if changed:
        feed.note_providers(conn, [provider_id])
    return changed


def names_by_provider(conn: Connection, link: sa.Table, column: str,
                      name: sa.Column, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    """``{provider id: {name of each linked row}}`` for the given providers."""
    ids = sorted(set(provider_ids))
    if not ids:
        return {}
    result: dict[int, set[str]] = {}
    for provider_id, value in conn.execute(
            sa.select(link.c.resource_provider_id, name)
            .join(name.table, link.c[column] == name.table.c.id)
            .where(link.c.resource_provider_id.in_(ids))):
        result.setdefault(provider_id, set()).add(value)
    return result
