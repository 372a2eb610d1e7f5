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
# A trigger writes one feed row per *item*: ``("root", ROW)`` the tree of a
# provider row itself, ``("member", ROW)`` the tree of the provider a row
# belongs to (nothing if that provider is gone: its own delete says so),
# ``("usage", ROW, SIGN)`` a usage delta, ``("names",)`` names changed.
# ROW is NEW or OLD.


def _items(table: str, event: str) -> list[tuple[str, ...]]:
    rows = {"INSERT": ["NEW"], "UPDATE": ["OLD", "NEW"], "DELETE": ["OLD"]}[event]
    if table == "resource_providers":
        return [("root", r) for r in rows]
    if table in TREE_TABLES:
        return [("member", r) for r in rows]
    if table == "allocations":
        return [("usage", r, "-" if r == "OLD" else "") for r in rows]
    if table in NAME_TABLES:
        return [("names",)]
    raise ValueError(table)


_NOW = {"sqlite": "datetime('now')", "mysql": "UTC_TIMESTAMP()",
        "postgresql": "(now() AT TIME ZONE 'utc')"}


def _data(backend: str, item: tuple[str, ...], member_root: str) -> str:
    kind = item[0]
    if kind == "root":
        return _tree_json(backend, f"COALESCE({item[1]}.root_provider_id, {item[1]}.id)")
    if kind == "member":
        return _tree_json(backend, member_root)
    if kind == "usage":
        return _usage_json(backend, item[1], item[2])
    return "'{\"n\":1}'"


def _bodies(backend: str, table: str, event: str) -> list[str]:
    """The statements one trigger runs."""
    guard = ([_capacity_guard(backend)]
             if (table, event) == ("allocations", "INSERT") and backend != "sqlite" else [])
    if backend == "mysql":
        return [_mysql_statement(item) for item in _items(table, event)] + guard
    out = []
    for item in _items(table, event):
        tail = ""
        if item[0] == "member":
            tail = (f" FROM resource_providers rp WHERE rp.id = {item[1]}.resource_provider_id"
                    " AND rp.root_provider_id IS NOT NULL")
        out.append("INSERT INTO placement_changes (created_at, data) SELECT "
                   f"{_NOW[backend]}, {_data(backend, item, 'rp.root_provider_id')}{tail}")
    return out + guard


# Capacity, checked again for another program's allocation, under the
# provider's row lock that allotment's claims take first too: two writers
# that each checked usage before the other committed cannot both commit
# past capacity.  (Upstream Placement 16.0.0 lets that happen between its
# own processes too.)  An allocation that does not fit is refused as a
# deadlock: nothing of it is stored.  Upstream 16.0.0 runs an allocation
# write again after a deadlock, but in the same transaction (aborted on
# PostgreSQL; on MySQL a trigger's error undoes its statement only, and the
# transaction's snapshot still lacks the concurrent claim), so it answers
# 500 (docs/adopting.md).  SQLite writers are serial: there every writer's
# own check already saw everything.
_USED = ("SELECT COALESCE(SUM(a.used), 0) FROM allocations a WHERE "
         "a.resource_provider_id = NEW.resource_provider_id "
         "AND a.resource_class_id = NEW.resource_class_id")
_CAPACITY = ("SELECT (i.total - i.reserved) * i.allocation_ratio FROM inventories i "
             "WHERE i.resource_provider_id = NEW.resource_provider_id "
             "AND i.resource_class_id = NEW.resource_class_id")
_DEADLOCK_WORDS = "allocation over capacity by a concurrent write; try restarting transaction"


def _capacity_guard(backend: str) -> str:
    if backend == "postgresql":
        return ("PERFORM 1 FROM resource_providers WHERE id = NEW.resource_provider_id "
                f"FOR UPDATE; IF ({_USED}) > ({_CAPACITY}) THEN RAISE EXCEPTION "
                f"'deadlock detected: {_DEADLOCK_WORDS}' USING ERRCODE = '40P01'; END IF")
    if backend == "mysql":
        # Locking reads: the writer's own snapshot (REPEATABLE READ) would
        # not show what committed since it began.
        return ("SET v_root = (SELECT id FROM resource_providers "
                "WHERE id = NEW.resource_provider_id FOR UPDATE); "
                f"IF ({_USED} LOCK IN SHARE MODE) > ({_CAPACITY} LOCK IN SHARE MODE) THEN "
                "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = "
                f"'Deadlock found when trying to get lock ({_DEADLOCK_WORDS})'; END IF")
    raise ValueError(backend)


# On MySQL a feed row's id is the last row's plus one, read under the last
# row's lock (as storage/feed.py appends): ids then commit in order on every
# node of a Galera cluster, and two nodes taking the same id conflict in
# certification.  A duplicate is skipped and the tail read again.
_MYSQL_DECLARE = (
    "DECLARE v_tail BIGINT DEFAULT NULL; DECLARE v_root BIGINT DEFAULT NULL; "
    "DECLARE v_tries INT DEFAULT 0; DECLARE v_done INT DEFAULT 0; ")


def _mysql_append(data: str) -> str:
    # The id after the tail is looked for with a locking read too: a plain
    # read would see the snapshot of the writer's transaction (REPEATABLE
    # READ), not a row committed since; the tail's lock then keeps others
    # from taking that id before this transaction ends.
    return ("SET v_tries = 0, v_done = 0; REPEAT SET v_tries = v_tries + 1; "
            "SET v_tail = COALESCE((SELECT id FROM placement_changes ORDER BY id DESC "
            "LIMIT 1 FOR UPDATE), 0); "
            "IF (SELECT COUNT(*) FROM placement_changes WHERE id = v_tail + 1 FOR UPDATE) = 0 "
            "THEN INSERT INTO placement_changes (id, created_at, data) "
            f"VALUES (v_tail + 1, {_NOW['mysql']}, {data}); SET v_done = 1; END IF; "
            "UNTIL v_done = 1 OR v_tries >= 1000 END REPEAT; "
            "IF v_done = 0 THEN SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, "
            "MESSAGE_TEXT = 'Deadlock found when trying to get lock (allotment change feed "
            "busy); try restarting transaction'; "
            "END IF")


def _mysql_statement(item: tuple[str, ...]) -> str:
    if item[0] != "member":
        return _mysql_append(_data("mysql", item, ""))
    return (f"SET v_root = (SELECT root_provider_id FROM resource_providers "
            f"WHERE id = {item[1]}.resource_provider_id); IF v_root IS NOT NULL THEN "
            f"{_mysql_append(_data('mysql', item, 'v_root'))}; END IF")


def _tree_json(backend: str, root: str) -> str:
    if backend == "postgresql":
        return f"json_build_object('t', json_build_array({root}))::text"
    if backend == "mysql":
        # Cast: MariaDB writes a stored program's variable as a JSON string.
        return f"JSON_OBJECT('t', JSON_ARRAY(CAST({root} AS SIGNED)))"
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
            conn.exec_driver_sql(_mysql_create(name, table, event))
        else:
            body = "".join(f"{s}; " for s in statements)
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW "
                f"WHEN NOT EXISTS (SELECT 1 FROM allotment_writer) BEGIN {body}END")


def _mysql_create(name: str, table: str, event: str) -> str:
    body = "; ".join(_bodies("mysql", table, event))
    return (f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW "
            f"BEGIN {_MYSQL_DECLARE}IF @allotment_writer IS NULL THEN {body}; END IF; END")


def recreate(conn: Connection, name: str) -> list[str]:
    """Drop and create again (MySQL) the trigger ``name``, or every trigger
    of this module when ``name`` is not one of them ("" included); returns
    the names re-created.

    Dropping a trigger closes every cached instance of its table, so the
    next use parses the triggers afresh (storage/faults.py, broken_trigger).
    Another program's write that lands between the two statements is not
    reported: the caller tells every reader to read the world again.
    """
    chosen = [t for t in all_triggers() if t[0] == name] or all_triggers()
    for trigger, table, event in chosen:
        conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.exec_driver_sql(_mysql_create(trigger, table, event))
    return [t[0] for t in chosen]


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
