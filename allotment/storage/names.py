"""SQL shared by the two name registries: resource classes and traits.

Both are tables of unique names where standard entries come from a library
(os-resource-classes, os-traits) and CUSTOM_ entries from users.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage.db import storable_text, utcnow


def get(conn: Connection, table: sa.Table, name: str) -> Row | None:
    if not storable_text(name):
        return None
    return conn.execute(sa.select(table).where(table.c.name == name)).first()


_IDS_FOR: dict[str, sa.Select] = {}


def ids_for(conn: Connection, table: sa.Table, names: Iterable[str]) -> dict[str, int]:
    """Map each known name to its id; unknown names are simply absent."""
    wanted = sorted({name for name in names if storable_text(name)})
    if not wanted:
        return {}
    query = _IDS_FOR.get(table.name)
    if query is None:
        # Built once per table: building costs more than running it.
        query = _IDS_FOR[table.name] = sa.select(table.c.name, table.c.id).where(
            table.c.name.in_(sa.bindparam("names", expanding=True)))
    return {name: id_ for name, id_ in conn.execute(query, {"names": wanted})}


def insert(conn: Connection, table: sa.Table, name: str) -> Row | None:
    """Insert ``name``; None when it already exists (raced or not).

    The savepoint keeps the surrounding transaction usable on PostgreSQL
    after a unique violation.
    """
    if get(conn, table, name) is not None:
        return None
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(table).values(name=name, created_at=utcnow()))
    except sa.exc.IntegrityError:
        return None
    return get(conn, table, name)


def ensure(conn: Connection, table: sa.Table, name: str) -> tuple[Row, bool]:
    """The row named ``name``, created if missing; tells whether it was created.

    A concurrent creator winning the race is not an error: its row is
    returned as already existing.
    """
    existing = get(conn, table, name)
    if existing is not None:
        return existing, False
    row = insert(conn, table, name)
    if row is None:
        return get(conn, table, name), False
    return row, True


def rename(conn: Connection, table: sa.Table, old: str, new: str) -> bool:
    """Rename; False when ``new`` is taken."""
    try:
        with conn.begin_nested():
            conn.execute(sa.update(table).where(table.c.name == old)
                         .values(name=new, updated_at=utcnow()))
    except sa.exc.IntegrityError:
        return False
    return True


def delete(conn: Connection, table: sa.Table, name: str) -> int:
    if not storable_text(name):
        return 0
    return conn.execute(sa.delete(table).where(table.c.name == name)).rowcount


def sync(conn: Connection, table: sa.Table, names: Iterable[str]) -> int:
    """Insert the names not yet present; returns how many were added."""
    present = {n for (n,) in conn.execute(sa.select(table.c.name))}
    missing = [n for n in names if n not in present]
    if missing:
        now = utcnow()
        conn.execute(sa.insert(table), [{"name": n, "created_at": now} for n in missing])
    return len(missing)
