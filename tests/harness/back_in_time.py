"""A database put back to an earlier state, as one that lost commits is.

A database that goes back in time (commits lost in a crash under relaxed
durability, a cluster bootstrapped from a node that had not seen them, a
failover to a replica that was behind) holds exactly what it held at some
earlier moment, and hands out again the ids the lost transactions took.
:class:`Backup` reads every table in one snapshot and puts those rows
back, with the counters that hand out ids set back too, through
allotment's own connections (so the triggers that report other writers
stay quiet, as they are during crash recovery).  On PostgreSQL the epoch
is emptied as crash recovery and promotion empty it (``keep_epoch``: as a
restore from a cold file-system copy keeps it).
"""

from __future__ import annotations

import sqlalchemy as sa

from allotment.storage import tables
from allotment.storage.db import Database

# Alembic's own, and the row an allotment write holds on SQLite.
_SKIP = {"allotment_writer"}
_LINKS = ("parent_provider_id", "root_provider_id")


def _tables() -> list[sa.Table]:
    return [t for t in tables.metadata.sorted_tables if t.name not in _SKIP]


class Backup:
    def __init__(self, db: Database) -> None:
        self.rows: dict[str, list[dict]] = {}
        with db.read() as conn:
            for table in _tables():
                self.rows[table.name] = [dict(r._mapping) for r in conn.execute(sa.select(table))]

    def restore(self, db: Database, *, keep_epoch: bool = False) -> None:
        providers = tables.resource_providers
        with db.engine.connect() as conn, conn.begin():
            if db.backend == "sqlite":
                conn.execute(sa.insert(tables.allotment_writer).values(id=1))
            conn.execute(sa.update(providers).values(parent_provider_id=None,
                                                     root_provider_id=None))
            for table in reversed(_tables()):
                conn.execute(sa.delete(table))
            for table in _tables():
                rows = self.rows[table.name]
                if table.name == "allotment_epoch" and not keep_epoch:
                    continue
                if table is providers:
                    rows = [{**r, **dict.fromkeys(_LINKS)} for r in rows]
                if rows:
                    conn.execute(sa.insert(table), rows)
            for row in self.rows[providers.name]:
                conn.execute(sa.update(providers).where(providers.c.id == row["id"])
                             .values({k: row[k] for k in _LINKS}))
            if db.backend != "mysql":
                _set_back_counters(conn, db.backend)
            if db.backend == "sqlite":
                conn.execute(sa.delete(tables.allotment_writer))
        if db.backend == "mysql":
            # DDL: MySQL commits it on its own, so after the rows.
            with db.engine.connect() as conn:
                _set_back_counters(conn, db.backend)


def _set_back_counters(conn, backend: str) -> None:
    """The next id of every table is the one after its highest row again."""
    for table in _tables():
        ids = [c for c in table.primary_key.columns if c.autoincrement is True
               or (c.name == "id" and len(table.primary_key.columns) == 1
                   and c.autoincrement == "auto" and isinstance(c.type, sa.Integer))]
        if not ids:
            continue
        name = table.name
        if backend == "postgresql":
            conn.execute(sa.text(
                f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                f"COALESCE((SELECT max(id) FROM {name}), 0) + 1, false) "
                f"WHERE pg_get_serial_sequence('{name}', 'id') IS NOT NULL"))
        elif backend == "mysql":
            conn.exec_driver_sql(f"ALTER TABLE `{name}` AUTO_INCREMENT = 1")
        else:
            conn.execute(sa.text(
                "UPDATE sqlite_sequence SET seq = "
                f"(SELECT COALESCE(max(id), 0) FROM {name}) WHERE name = :n"), {"n": name})
