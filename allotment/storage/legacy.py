"""Databases of an earlier allotment, whose schema was its own.

Before allotment took upstream Placement's schema as its own, its history
(revisions 0001-0004, in ``alembic_version``) numbered resource classes as
they came, keyed allocations by the consumer's row id, and named
constraints its own way.  :func:`convert` rewrites such a database into
upstream's tables, every row kept, so that ``db sync`` then carries on as
for any other database:

* the old tables are renamed ``legacy_*``, upstream's are created, the rows
  copied across (allocations take their consumer's UUID; resource classes
  take upstream's numbers: a standard class its place in
  os_resource_classes.STANDARDS, a custom one 10000 and up, in the order
  they were made) and the old tables dropped;
* the change feed is kept, with a row that makes every process read its
  world again (class ids in older rows no longer mean what they did).

On PostgreSQL and SQLite all of it is one transaction; MySQL commits each
DDL statement, so there a failure part way leaves ``legacy_*`` tables
behind, which the next run refuses to touch: restore the backup taken
before (see docs/adopting.md).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable

import os_resource_classes
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from allotment.storage import tables

# Children before parents: the order their rows are copied in reverse.
DATA_TABLES = (
    "resource_classes", "traits", "resource_providers", "inventories",
    "placement_aggregates", "resource_provider_aggregates", "resource_provider_traits",
    "projects", "users", "consumer_types", "consumers", "allocations",
)
_SERIAL = ("allocations", "consumer_types", "consumers", "inventories",
           "placement_aggregates", "projects", "resource_classes", "resource_providers",
           "traits", "users")


class InterruptedConversion(Exception):
    """A conversion on MySQL stopped part way before."""


def class_ids(rows: list[tuple[int, str]]) -> dict[int, int]:
    """New id of each resource class, from its old id and its name."""
    standards = {name: index for index, name in enumerate(os_resource_classes.STANDARDS)}
    mapping = {}
    custom = tables.FIRST_CUSTOM_CLASS_ID
    for old_id, name in sorted(rows):
        if name in standards:
            mapping[old_id] = standards[name]
        else:
            mapping[old_id] = custom
            custom += 1
    return mapping


def convert(engine: Engine, create_upstream: Callable[[Connection], None]) -> None:
    """Rewrite an earlier allotment's database into upstream's tables.

    ``create_upstream(conn)`` creates upstream's tables inside the
    conversion's transaction (the migrations module, which calls this, knows
    how; passing it in keeps the two modules from importing each other).
    """
    with engine.connect() as conn:
        names = set(sa.inspect(conn).get_table_names())
        if any(name.startswith("legacy_") for name in names):
            raise InterruptedConversion(
                "A conversion of this database from an earlier allotment's schema "
                "stopped part way (tables named legacy_* are there): restore the backup "
                "taken before it and run 'allotment-manage db sync' again.")
        conn.rollback()  # ends the transaction the look above began
        with conn.begin():
            _defer_foreign_keys(conn)
            for name in DATA_TABLES:
                conn.exec_driver_sql(f"ALTER TABLE {name} RENAME TO legacy_{name}")
            if "placement_state" in names:
                conn.exec_driver_sql("DROP TABLE placement_state")
            create_upstream(conn)
            _copy(conn)
            for name in reversed(DATA_TABLES):
                conn.exec_driver_sql(f"DROP TABLE legacy_{name}")
            if sa.inspect(conn).has_table(tables.placement_changes.name):
                conn.execute(sa.insert(tables.placement_changes).values(
                    created_at=datetime.datetime.now(datetime.UTC).replace(tzinfo=None),
                    data=json.dumps({"r": 1})))


def _defer_foreign_keys(conn: Connection) -> None:
    # Rows are copied table by table; a provider's parent may come later.
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("PRAGMA defer_foreign_keys = ON")
    elif conn.dialect.name == "mysql":
        conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS = 0")


def _legacy(conn: Connection, name: str) -> sa.Table:
    return sa.Table(f"legacy_{name}", sa.MetaData(), autoload_with=conn)


def _copy(conn: Connection) -> None:
    old_classes = _legacy(conn, "resource_classes")
    mapping = class_ids([(r.id, r.name) for r in conn.execute(
        sa.select(old_classes.c.id, old_classes.c.name))])

    def new_class(column: sa.Column) -> sa.Case:
        return sa.case(mapping, value=column, else_=column)

    conn.execute(sa.insert(tables.resource_classes).from_select(
        ["id", "name", "created_at", "updated_at"],
        sa.select(new_class(old_classes.c.id), old_classes.c.name,
                  old_classes.c.created_at, old_classes.c.updated_at)))
    for name in ("traits", "resource_providers", "placement_aggregates",
                 "resource_provider_aggregates", "resource_provider_traits", "projects",
                 "users", "consumer_types", "consumers"):
        _copy_as_is(conn, name)
    old = _legacy(conn, "inventories")
    columns = [c.name for c in tables.inventories.columns]
    conn.execute(sa.insert(tables.inventories).from_select(columns, sa.select(*[
        new_class(old.c[c]) if c == "resource_class_id" else old.c[c] for c in columns])))
    old, owners = _legacy(conn, "allocations"), _legacy(conn, "consumers")
    columns = [c.name for c in tables.allocations.columns]
    picked = {"consumer_id": owners.c.uuid,
              "resource_class_id": new_class(old.c.resource_class_id)}
    conn.execute(sa.insert(tables.allocations).from_select(columns, sa.select(*[
        picked[c] if c in picked else old.c[c] for c in columns
    ]).select_from(old.join(owners, old.c.consumer_id == owners.c.id))))
    if conn.dialect.name == "postgresql":
        for name in _SERIAL:
            conn.exec_driver_sql(
                f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                f"COALESCE(MAX(id), 1), MAX(id) IS NOT NULL) FROM {name}")


def _copy_as_is(conn: Connection, name: str) -> None:
    target = tables.metadata.tables[name]
    old = _legacy(conn, name)
    columns = [c.name for c in target.columns if c.name in old.c]
    conn.execute(sa.insert(target).from_select(columns,
                                               sa.select(*[old.c[c] for c in columns])))
