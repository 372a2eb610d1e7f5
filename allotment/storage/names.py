"""SQL shared by the two name registries: resource classes and traits.

Both are tables of unique names where standard entries come from a library
(os-resource-classes, os-traits) and CUSTOM_ entries from users.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable

import os_resource_classes
import os_traits
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from allotment.storage import direct
from allotment.storage.clock import utcnow
from allotment.storage.db import storable_text

# Standard names are never renamed or deleted (the API refuses both and
# start-up only adds missing ones), so a standard name's row, once read,
# stays as read for the life of the database.  Writes that name only
# standard classes or traits (a compute host's inventory, its CPU traits, a
# claim of VCPU and MEMORY_MB) therefore skip the lookup round trip.
_STANDARD = {"resource_classes": frozenset(os_resource_classes.STANDARDS),
             "traits": frozenset(os_traits.get_traits())}
# Per engine (one database), per query: standard name -> the row read.
_KEPT: weakref.WeakKeyDictionary[Engine, dict[int, dict[str, Row]]] = \
    weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def rows_named(conn: Connection, table: sa.Table, query: sa.Select,
               names: Iterable[str], *, one: sa.Select | None = None) -> list[Row]:
    """``query`` (a select of ``table`` with a ``name`` column, taking the
    expanding parameter ``names``) for ``names``; rows of standard names
    come from what an earlier call read, when there was one.  ``one`` is the
    same select for a single ``name``: a statement that never changes, so
    it can run directly (storage/direct.py) when one name is to be read."""
    wanted = sorted({name for name in names if storable_text(name)})
    if not wanted:
        return []
    with _KEPT_LOCK:
        kept = _KEPT.setdefault(conn.engine, {}).setdefault(id(query), {})
    found = [kept[name] for name in wanted if name in kept]
    missing = [name for name in wanted if name not in kept]
    if missing:
        standard = _STANDARD.get(table.name, frozenset())
        rows = (direct.execute(conn, one, {"name": missing[0]})
                if one is not None and len(missing) == 1
                else conn.execute(query, {"names": missing}))
        for row in rows:
            found.append(row)
            if row.name in standard:
                kept[row.name] = row
    return found


def get(conn: Connection, table: sa.Table, name: str) -> Row | None:
    if not storable_text(name):
        return None
    return conn.execute(sa.select(table).where(table.c.name == name)).first()


_IDS_FOR: dict[str, tuple[sa.Select, sa.Select]] = {}


def ids_for(conn: Connection, table: sa.Table, names: Iterable[str]) -> dict[str, int]:
    """Map each known name to its id; unknown names are simply absent."""
    queries = _IDS_FOR.get(table.name)
    if queries is None:
        # Built once per table: building costs more than running it.
        select = sa.select(table.c.name, table.c.id)
        queries = _IDS_FOR[table.name] = (
            select.where(table.c.name.in_(sa.bindparam("names", expanding=True))),
            select.where(table.c.name == sa.bindparam("name")))
    query, one = queries
    return {row.name: row.id for row in rows_named(conn, table, query, names, one=one)}


# How often an insert whose chosen id a concurrent writer took is tried again.
_ID_ATTEMPTS = 10


def insert(conn: Connection, table: sa.Table, name: str,
           next_id: Callable[[Connection], int] | None = None) -> Row | None:
    """Insert ``name``; None when it already exists (raced or not).

    ``next_id`` chooses the new row's id where the database does not (custom
    resource classes); when a concurrent writer took that id first, another
    is chosen.  The savepoint keeps the surrounding transaction usable on
    PostgreSQL after a unique violation.
    """
    for _ in range(_ID_ATTEMPTS):
        if get(conn, table, name) is not None:
            return None
        values = {"name": name, "created_at": utcnow()}
        if next_id is not None:
            values["id"] = next_id(conn)
        try:
            with conn.begin_nested():
                conn.execute(sa.insert(table).values(values))
        except sa.exc.IntegrityError:
            if next_id is None:
                return None
            continue  # the name (found above next time) or the id was taken
        return get(conn, table, name)
    return None


def get_or_insert(conn: Connection, table: sa.Table, name: str,
                  next_id: Callable[[Connection], int] | None = None) -> tuple[Row, bool]:
    """The row named ``name``, created if missing; tells whether it was created.

    A concurrent creator winning the race is not an error: its row is
    returned as already existing.
    """
    existing = get(conn, table, name)
    if existing is not None:
        return existing, False
    row = insert(conn, table, name, next_id)
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


def sync(conn: Connection, table: sa.Table, names: Iterable[str], *,
         numbered: bool = False) -> int:
    """Insert the names not yet present; returns how many were added.

    ``numbered``: each name's id is its place in ``names`` (standard
    resource classes, numbered as upstream numbers them).
    """
    present = {n for (n,) in conn.execute(sa.select(table.c.name))}
    now = utcnow()
    missing = [{"name": n, "created_at": now, **({"id": i} if numbered else {})}
               for i, n in enumerate(names) if n not in present]
    if missing:
        conn.execute(sa.insert(table), missing)
    return len(missing)
