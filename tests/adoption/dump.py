"""What a database holds, as plain data a test can compare: its schema
(tables, columns, keys, indexes, triggers, functions, collations) and every
row of every table.

Read with SQLAlchemy's inspector and the servers' own catalogues, so it
describes what is in the database, not what either service believes is.
"""

from __future__ import annotations

import sqlalchemy as sa

from allotment.storage import db as db_mod


def engine_for(database_url: str) -> sa.Engine:
    return sa.create_engine(db_mod.normalise_url(database_url), poolclass=sa.pool.NullPool)


def _table(insp: sa.Inspector, name: str) -> dict:
    columns = [(c["name"], str(c["type"]), c["nullable"], str(c.get("default")),
                bool(c.get("autoincrement") is True))
               for c in insp.get_columns(name)]
    pk = insp.get_pk_constraint(name)
    fks = sorted((fk.get("name") or "", tuple(fk["constrained_columns"]),
                  fk["referred_table"], tuple(fk["referred_columns"]))
                 for fk in insp.get_foreign_keys(name))
    uniques = sorted((u.get("name") or "", tuple(u["column_names"]))
                     for u in insp.get_unique_constraints(name))
    indexes = sorted((i.get("name") or "", tuple(c or "" for c in i["column_names"]),
                      bool(i["unique"]))
                     for i in insp.get_indexes(name))
    return {"columns": columns, "primary_key": (pk.get("name"), tuple(pk["constrained_columns"])),
            "foreign_keys": fks, "unique": uniques, "indexes": indexes}


def _extras(conn: sa.Connection) -> dict:
    """Triggers, functions and collations: what the inspector does not tell."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        rows = conn.execute(sa.text(
            "SELECT type, name, tbl_name FROM sqlite_master "
            "WHERE type IN ('trigger', 'view') ORDER BY name")).all()
        return {"triggers": [tuple(r) for r in rows]}
    if dialect == "postgresql":
        triggers = conn.execute(sa.text(
            "SELECT tgname, tgrelid::regclass::text FROM pg_trigger "
            "WHERE NOT tgisinternal ORDER BY 1, 2")).all()
        functions = conn.execute(sa.text(
            "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = current_schema() ORDER BY 1")).all()
        sequences = conn.execute(sa.text(
            "SELECT sequence_name FROM information_schema.sequences "
            "WHERE sequence_schema = current_schema() ORDER BY 1")).all()
        return {"triggers": [tuple(r) for r in triggers],
                "functions": [r[0] for r in functions],
                "sequences": [r[0] for r in sequences]}
    triggers = conn.execute(sa.text(
        "SELECT trigger_name, event_object_table FROM information_schema.triggers "
        "WHERE trigger_schema = DATABASE() ORDER BY 1")).all()
    tables = conn.execute(sa.text(
        "SELECT table_name, table_collation, engine FROM information_schema.tables "
        "WHERE table_schema = DATABASE() ORDER BY 1")).all()
    columns = conn.execute(sa.text(
        "SELECT table_name, column_name, character_set_name, collation_name "
        "FROM information_schema.columns WHERE table_schema = DATABASE() "
        "AND collation_name IS NOT NULL ORDER BY 1, 2")).all()
    routines = conn.execute(sa.text(
        "SELECT routine_name FROM information_schema.routines "
        "WHERE routine_schema = DATABASE() ORDER BY 1")).all()
    return {"triggers": [tuple(r) for r in triggers],
            "table_collations": [tuple(r) for r in tables],
            "column_collations": [tuple(r) for r in columns],
            "routines": [r[0] for r in routines]}


def schema(database_url: str) -> dict:
    """Every table's description, plus triggers, functions and collations."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as conn:
            insp = sa.inspect(conn)
            out = {name: _table(insp, name) for name in sorted(insp.get_table_names())}
            out["views"] = sorted(insp.get_view_names())
            out.update(_extras(conn))
            return out
    finally:
        engine.dispose()


def rows(database_url: str) -> dict[str, list[tuple]]:
    """Every row of every table, sorted (row order is not data)."""
    engine = engine_for(database_url)
    try:
        with engine.connect() as conn:
            meta = sa.MetaData()
            meta.reflect(conn)
            return {name: sorted((tuple(r) for r in conn.execute(sa.select(table))), key=repr)
                    for name, table in sorted(meta.tables.items())}
    finally:
        engine.dispose()


def everything(database_url: str) -> dict:
    return {"schema": schema(database_url), "rows": rows(database_url)}


def differences(before: dict, after: dict, path: str = "") -> list[str]:
    """Where two descriptions differ, as readable lines (empty when equal)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after), key=str):
            where = f"{path}/{key}"
            if key not in before:
                out.append(f"{where}: only after: {after[key]!r}"[:400])
            elif key not in after:
                out.append(f"{where}: only before: {before[key]!r}"[:400])
            else:
                out.extend(differences(before[key], after[key], where))
        return out
    if before != after:
        if isinstance(before, list) and isinstance(after, list):
            gone = [x for x in before if x not in after]
            new = [x for x in after if x not in before]
            return [f"{path}: only before {gone!r}"[:600] + f"; only after {new!r}"[:600]]
        return [f"{path}: {before!r} != {after!r}"[:600]]
    return []
