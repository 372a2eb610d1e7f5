"""allotment-manage: database administration."""

from __future__ import annotations

import argparse
import sys

from allotment import distributions
from allotment.cmd import audit_report, common
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration


def main(argv: list[str] | None = None) -> int:
    distributions.refuse_if_shadowed()
    parser = argparse.ArgumentParser(prog="allotment-manage")
    common.add_config_args(parser)
    commands = parser.add_subparsers(dest="category", required=True)
    db_parser = commands.add_parser("db", help="database schema")
    db_commands = db_parser.add_subparsers(dest="action", required=True)
    db_commands.add_parser(
        "sync", help="create or migrate the schema to the latest version; on upstream "
        "Placement's database, adopt it")
    db_commands.add_parser("version", help="print the schema version")
    down = db_commands.add_parser(
        "downgrade", help="'downgrade upstream': hand the database back to upstream "
        "Placement 16.0.0's schema, keeping every row")
    down.add_argument("target", choices=["upstream"])
    openapi_parser = commands.add_parser(
        "openapi", help="write the OpenAPI document of the API (what /openapi.json serves)")
    openapi_parser.add_argument("--output", "-o", default="-",
                                help="file to write (default: standard output)")
    audit_parser = commands.add_parser(
        "audit", help="look for inconsistencies in the database (exit 1 when any "
        "is left)")
    audit_parser.add_argument("--fix", action="store_true",
                              help="repair what can be repaired without losing anything: "
                              "consumers without allocations, stored roots that disagree "
                              "with the parents")
    audit_parser.add_argument("--format", "-f", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    if args.category == "openapi":
        return _write_openapi(args.output)
    conf = common.load_conf(args)

    database = db_mod.Database.from_conf(conf)
    if args.category == "audit":
        try:
            return audit_report.main(database, fix=args.fix, fmt=args.format)
        finally:
            database.dispose()
    try:
        if args.action == "sync":
            return _sync(database)
        if args.action == "downgrade":
            return _hand_back(database)
        print(migration.describe(database.engine))
    finally:
        database.dispose()
    return 0


def _schema_change(what: str, change) -> int | None:
    """Run ``change``; an exit code if it failed (after saying why), else None."""
    try:
        change()
    except migration.SchemaError as exc:
        print(f"allotment-manage: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(_interrupted(what, exc), file=sys.stderr)
        return 1
    return None


def _sync(database: db_mod.Database) -> int:
    before = migration.state(database.engine)
    failed = _schema_change("db sync", lambda: migration.upgrade(database.engine))
    if failed is not None:
        return failed
    setup.sync_standards(database)
    if before.upstream == migration.UPSTREAM_HEAD and before.own is None:
        print("Adopted upstream Placement's database; 'allotment-manage db downgrade "
              "upstream' hands it back.")
    print(f"Database schema at {migration.describe(database.engine)}")
    return 0


def _hand_back(database: db_mod.Database) -> int:
    failed = _schema_change("db downgrade upstream",
                            lambda: migration.hand_back(database.engine))
    if failed is not None:
        return failed
    print(f"Database schema at {migration.describe(database.engine)}; upstream "
          "Placement 16.0.0 serves it as it is.")
    return 0


def _interrupted(what: str, exc: Exception) -> str:
    hint = ""
    if "1419" in str(exc) or "SUPER privilege" in str(exc):
        hint = ("MySQL with binary logging lets only SUPER create triggers: set "
                "log_bin_trust_function_creators = 1 on the server (or grant SUPER), "
                "and grant TRIGGER on Placement's database.\n")
    return (f"allotment-manage: '{what}' stopped: {type(exc).__name__}: {exc}\n{hint}"
            "Placement's data is intact: on PostgreSQL and SQLite nothing of this run "
            "was kept; on MySQL the steps done so far are allotment's own additions, and "
            f"running '{what}' again once the cause is fixed finishes the job.")


def _write_openapi(output: str) -> int:
    # Imported here: the database commands need none of the API modules.
    from allotment.api import openapi

    text = openapi.dumps(openapi.build())
    if output == "-":
        sys.stdout.write(text)
    else:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
