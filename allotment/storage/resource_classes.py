"""SQL for resource classes."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import feed, names
from allotment.storage.tables import allocations, inventories, resource_classes

TABLE = resource_classes


def list_all(conn: Connection) -> list[Row]:
    return list(conn.execute(sa.select(TABLE).order_by(TABLE.c.id)))


def get(conn: Connection, name: str) -> Row | None:
    return names.get(conn, TABLE, name)


def ids_for(conn: Connection, wanted) -> dict[str, int]:
    return names.ids_for(conn, TABLE, wanted)


def ensure(conn: Connection, name: str) -> tuple[Row, bool]:
    row, created = names.ensure(conn, TABLE, name)
    if created:
        feed.note_names(conn)
    return row, created


def create(conn: Connection, name: str) -> Row | None:
    row = names.insert(conn, TABLE, name)
    if row is not None:
        feed.note_names(conn)
    return row


def rename(conn: Connection, old: str, new: str) -> bool:
    renamed = names.rename(conn, TABLE, old, new)
    if renamed:
        feed.note_names(conn)
    return renamed


def delete(conn: Connection, name: str) -> int:
    gone = names.delete(conn, TABLE, name)
    if gone:
        feed.note_names(conn)
    return gone


def in_use(conn: Connection, class_id: int) -> bool:
    """Whether any inventory or allocation refers to the class."""
    for table in (inventories, allocations):
        found = conn.execute(
            sa.select(table.c.id).where(table.c.resource_class_id == class_id).limit(1)
        ).first()
        if found is not None:
            return True
    return False


def sync(conn: Connection, standard) -> int:
    added = names.sync(conn, TABLE, standard)
    if added:
        feed.note_names(conn)
    return added
