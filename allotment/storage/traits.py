"""SQL for traits."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import feed, names
from allotment.storage.tables import resource_provider_traits, traits

TABLE = traits


def get(conn: Connection, name: str) -> Row | None:
    return names.get(conn, TABLE, name)


def ids_for(conn: Connection, wanted: Iterable[str]) -> dict[str, int]:
    return names.ids_for(conn, TABLE, wanted)


_ROWS = sa.select(TABLE.c.id, TABLE.c.name, TABLE.c.created_at, TABLE.c.updated_at)
_ROWS_NAMED = _ROWS.where(
    TABLE.c.name.in_(sa.bindparam("names", expanding=True))).order_by(TABLE.c.name)
_ROW_NAMED = _ROWS.where(TABLE.c.name == sa.bindparam("name"))


def rows_named(conn: Connection, wanted: Iterable[str]) -> list[Row]:
    """The rows (id, name, created_at, updated_at) of the known traits among
    ``wanted``, by name; unknown names are simply absent."""
    return sorted(names.rows_named(conn, TABLE, _ROWS_NAMED, wanted, one=_ROW_NAMED),
                  key=lambda r: r.name)


def get_or_create_trait(conn: Connection, name: str) -> tuple[Row, bool]:
    row, created = names.get_or_insert(conn, TABLE, name)
    if created:
        feed.note_names(conn)
    return row, created


def create(conn: Connection, name: str) -> Row | None:
    row = names.insert(conn, TABLE, name)
    if row is not None:
        feed.note_names(conn)
    return row


def delete(conn: Connection, name: str) -> int:
    gone = names.delete(conn, TABLE, name)
    if gone:
        feed.note_names(conn)
    return gone


def sync(conn: Connection, standard: Iterable[str]) -> int:
    added = names.sync(conn, TABLE, standard)
    if added:
        feed.note_names(conn)
    return added


def in_use(conn: Connection, trait_id: int) -> bool:
    found = conn.execute(
        sa.select(resource_provider_traits.c.trait_id)
        .where(resource_provider_traits.c.trait_id == trait_id).limit(1)
    ).first()
    return found is not None


def list_filtered(
    conn: Connection,
    *,
    names_in: list[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[Row]:
    query = sa.select(TABLE)
    if names_in is not None:
        query = query.where(TABLE.c.name.in_(names_in))
    if prefix is not None:
        # A literal prefix match: % and _ in the prefix are not wildcards.
        query = query.where(TABLE.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        linked = sa.select(resource_provider_traits.c.trait_id)
        if associated:
            query = query.where(TABLE.c.id.in_(linked))
        else:
            query = query.where(TABLE.c.id.not_in(linked))
    return list(conn.execute(query.order_by(TABLE.c.name)))
