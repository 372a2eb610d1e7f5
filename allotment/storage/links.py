"""SQL shared by the provider link tables: traits and aggregates of providers."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import direct, feed
from allotment.storage.clock import utcnow


class _Statements:
    """A link table's statements, built once (building one costs SQLAlchemy
    more than running it)."""

    def __init__(self, link: sa.Table, column: str) -> None:
        target = link.c[column]
        mine = link.c.resource_provider_id == sa.bindparam("pid")
        self.current = sa.select(target).where(mine)
        self.delete = sa.delete(link).where(
            mine, target.in_(sa.bindparam("gone", expanding=True)))
        self.insert = sa.insert(link)


_STATEMENTS: dict[str, _Statements] = {}


def replace(conn: Connection, link: sa.Table, column: str, provider_id: int,
            wanted_ids: Iterable[int], *, current: Iterable[int] | None = None) -> bool:
    """Make ``wanted_ids`` the provider's exact set of linked ids.

    ``current`` is the provider's set as the caller read it in this
    transaction, if it did.  Only the difference is written, and the change
    is noted for the feed only when something changed; tells whether it did.
    """
    sql = _STATEMENTS.get(link.name)
    if sql is None:
        sql = _STATEMENTS[link.name] = _Statements(link, column)
    wanted = set(wanted_ids)
    if current is None:
        current = direct.execute(conn, sql.current, {"pid": provider_id}).scalars()
    current = set(current)
    gone = sorted(current - wanted)
    if gone:
        conn.execute(sql.delete, {"pid": provider_id, "gone": gone})
    added = sorted(wanted - current)
    if added:
        now = utcnow()
        direct.execute(conn, sql.insert, [
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
