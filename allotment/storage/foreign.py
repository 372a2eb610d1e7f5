"""Writes made by processes that are not allotment, reported to the change feed.

While a cloud replaces upstream Placement's API processes with allotment's
one at a time, both write to the same database.  allotment's processes keep
the provider world in memory and learn of changes only from the change feed
(storage/feed.py), which upstream knows nothing of.  So the database itself
reports other writers' changes: a trigger on each table the world is built
from appends a feed row in the writer's own transaction, in the feed's own
vocabulary (``t`` for trees to read again, ``u`` for usage deltas, ``n`` for
names).  The row commits or rolls back with the write, so a reader applies
a foreign write exactly as it applies one of ours.

allotment's own connections are told apart, so that their writes are not
reported twice: on PostgreSQL by the session setting ``allotment.writer``
(given when connecting, see storage/db.py), on MySQL by the session variable
``@allotment_writer`` (set when connecting), on SQLite by a row in
``allotment_writer`` that an allotment write transaction holds while it runs
(SQLite has no session state a trigger can read; writers are serial, so no
other connection ever sees that row).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# The tables the world is built from, by what a change to them means.
TREE_TABLES = ("inventories", "resource_provider_traits", "resource_provider_aggregates")
NAME_TABLES = ("resource_classes", "traits")
EVENTS = ("INSERT", "UPDATE", "DELETE")
PREFIX = "allotment_fw_"


def _trigger_name(table: str, event: str) -> str:
    return f"{PREFIX}{table}_{event[:3].lower()}"


def all_triggers() -> list[tuple[str, str, str]]:
    """(trigger name, table, event) of every trigger this module installs."""
    tables = ("resource_providers", *TREE_TABLES, "allocations", *NAME_TABLES)
    return [(_trigger_name(t, e), t, e) for t in tables for e in EVENTS]


# -- what each trigger writes, per backend -----------------------------------
# ``row`` is NEW or OLD; each returns the SQL of one INSERT ... SELECT into
# the feed (a SELECT, so that a provider already gone writes nothing).


def _sqlite_now() -> str:
    return "datetime('now')"


def _mysql_now() -> str:
    return "UTC_TIMESTAMP()"


def _pg_now() -> str:
    return "(now() AT TIME ZONE 'utc')"


def _insert(now: str, data: str, tail: str = "") -> str:
    return f"INSERT INTO placement_changes (created_at, data) SELECT {now}, {data}{tail}"


def _provider_roots(event: str) -> list[str]:
    rows = {"INSERT": ["NEW"], "UPDATE": ["OLD", "NEW"], "DELETE": ["OLD"]}[event]
    return [f"COALESCE({r}.root_provider_id, {r}.id)" for r in rows]


def _bodies(backend: str, table: str, event: str) -> list[str]:
    """The statements one trigger runs."""
    now = {"sqlite": _sqlite_now, "mysql": _mysql_now, "postgresql": _pg_now}[backend]()
    row = "OLD" if event == "DELETE" else "NEW"
    if table == "resource_providers":
        roots = _provider_roots(event)
        return [_insert(now, _tree_json(backend, root)) for root in roots]
    if table in TREE_TABLES:
        rows = ["OLD", "NEW"] if event == "UPDATE" else [row]
        return [_insert(now, _tree_json(backend, "rp.root_provider_id"),
                        f" FROM resource_providers rp WHERE rp.id = {r}.resource_provider_id"
                        " AND rp.root_provider_id IS NOT NULL")
                for r in rows]
    if table == "allocations":
        parts = []
        if event in ("UPDATE", "DELETE"):
            parts.append(("OLD", "-"))
        if event in ("INSERT", "UPDATE"):
            parts.append(("NEW", ""))
        return [_insert(now, _usage_json(backend, r, sign)) for r, sign in parts]
    if table in NAME_TABLES:
        return [_insert(now, "'{\"n\":1}'")]
    raise ValueError(table)


def _tree_json(backend: str, root: str) -> str:
    if backend == "postgresql":
        return f"json_build_object('t', json_build_array({root}))::text"
    if backend == "mysql":
        return f"JSON_OBJECT('t', JSON_ARRAY({root}))"
    return f"'{{\"t\":[' || {root} || ']}}'"


def _usage_json(backend: str, row: str, sign: str) -> str:
    used = f"{sign}{row}.used"
    if backend == "postgresql":
        return (f"json_build_object('u', json_build_array(json_build_array("
                f"{row}.resource_provider_id, {row}.resource_class_id, {used})))::text")
    if backend == "mysql":
        return (f"JSON_OBJECT('u', JSON_ARRAY(JSON_ARRAY("
                f"{row}.resource_provider_id, {row}.resource_class_id, {used})))")
    return (f"'{{\"u\":[[' || {row}.resource_provider_id || ',' || "
            f"{row}.resource_class_id || ',' || ({used}) || ']]}}'")


# -- installing and removing ---------------------------------------------------


def install(conn: Connection) -> None:
    """Create every trigger (replacing any of the same name)."""
    backend = conn.dialect.name
    remove(conn)
    if backend == "postgresql":
        _install_postgresql(conn)
        return
    for name, table, event in all_triggers():
        statements = _bodies(backend, table, event)
        if backend == "mysql":
            body = "; ".join(statements)
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW "
                f"BEGIN IF @allotment_writer IS NULL THEN {body}; END IF; END")
        else:
            body = "".join(f"{s}; " for s in statements)
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW "
                f"WHEN NOT EXISTS (SELECT 1 FROM allotment_writer) BEGIN {body}END")


def _install_postgresql(conn: Connection) -> None:
    # One function per table and event: PL/pgSQL cannot name NEW in a
    # DELETE trigger nor OLD in an INSERT one.
    for name, table, event in all_triggers():
        body = "".join(f"{s}; " for s in _bodies("postgresql", table, event))
        conn.exec_driver_sql(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF current_setting('allotment.writer', true) IS DISTINCT FROM 'on' THEN "
            f"{body}END IF; RETURN NULL; END $$")
        conn.exec_driver_sql(
            f"CREATE TRIGGER {name} AFTER {event} ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {name}()")


def remove(conn: Connection) -> None:
    """Drop every trigger (and function) this module installs, if present."""
    backend = conn.dialect.name
    for name, table, _event in all_triggers():
        if backend == "postgresql":
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            conn.exec_driver_sql(f"DROP FUNCTION IF EXISTS {name}()")
        else:
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")


def installed(conn: Connection) -> set[str]:
    """Names of this module's triggers present in the database."""
    backend = conn.dialect.name
    if backend == "postgresql":
        query = ("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal "
                 f"AND tgname LIKE '{PREFIX}%'")
    elif backend == "mysql":
        query = ("SELECT trigger_name FROM information_schema.triggers "
                 f"WHERE trigger_schema = DATABASE() AND trigger_name LIKE '{PREFIX}%'")
    else:
        query = f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '{PREFIX}%'"
    return {row[0] for row in conn.execute(sa.text(query))}
