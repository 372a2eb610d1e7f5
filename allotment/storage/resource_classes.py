"""SQL for resource classes."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import feed, names
from allotment.storage.tables import (
    FIRST_CUSTOM_CLASS_ID,
    allocations,
    inventories,
    resource_classes,
)

TABLE = resource_classes
_TOP_CUSTOM = sa.select(sa.func.max(TABLE.c.id)).where(TABLE.c.id >= FIRST_CUSTOM_CLASS_ID)


def next_custom_id(conn: Connection) -> int:
    """The id a new custom class gets: one past the highest, from 10000.

    Upstream numbers them so, and a database may go back to it.
    """
    top = conn.execute(_TOP_CUSTOM).scalar()
    return FIRST_CUSTOM_CLASS_ID if top is None else top + 1


def list_all(conn: Connection) -> list[Row]:
    return list(conn.execute(sa.select(TABLE).order_by(TABLE.c.id)))


def get(conn: Connection, name: str) -> Row | None:
    return names.get(conn, TABLE, name)


def ids_for(conn: Connection, wanted) -> dict[str, int]:
    return names.ids_for(conn, TABLE, wanted)


def get_or_create_class(conn: Connection, name: str) -> tuple[Row, bool]:
    row, created = names.get_or_insert(conn, TABLE, name, next_custom_id)
    if created:
        feed.note_names(conn)
    return row, created


def create(conn: Connection, name: str) -> Row | None:
    row = names.insert(conn, TABLE, name, next_custom_id)
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
    """Add the standard classes missing, each with its place in ``standard``
    as its id (os_resource_classes.STANDARDS, as upstream numbers them)."""
    added = names.sync(conn, TABLE, standard, numbered=True)
    if added:
        feed.note_names(conn)
    return added
