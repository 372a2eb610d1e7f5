"""SQL for resource classes."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import names
from allotment.storage.tables import allocations, inventories, resource_classes
from allotment.storage.topology import bump_topology

TABLE = resource_classes


def list_all(conn: Connection) -> list[Row]:
    return list(conn.execute(sa.select(TABLE).order_by(TABLE.c.id)))


def get(conn: Connection, name: str) -> Row | None:
    return names.get(conn, TABLE, name)


def ids_for(conn: Connection, wanted) -> dict[str, int]:
    return names.ids_for(conn, TABLE, wanted)


def ensure(conn: Connection, name: str) -> tuple[Row, bool]:
    return names.ensure(conn, TABLE, name)


def create(conn: Connection, name: str) -> Row | None:
    return names.insert(conn, TABLE, name)


def rename(conn: Connection, old: str, new: str) -> bool:
    renamed = names.rename(conn, TABLE, old, new)
    if renamed:
        # Inventories are loaded by class name for the candidate search.
        bump_topology(conn)
    return renamed


def delete(conn: Connection, name: str) -> int:
    return names.delete(conn, TABLE, name)


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
    return names.sync(conn, TABLE, standard)
