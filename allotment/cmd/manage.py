"""allotment-manage: database administration."""

from __future__ import annotations

import argparse
import sys

from allotment.cmd import audit_report, common
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="allotment-manage")
    common.add_config_args(parser)
    commands = parser.add_subparsers(dest="category", required=True)
    db_parser = commands.add_parser("db", help="database schema")
    db_commands = db_parser.add_subparsers(dest="action", required=True)
    db_commands.add_parser("sync", help="create or migrate the schema to the latest version")
    db_commands.add_parser("version", help="print the schema version")
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
            migration.upgrade(database.engine)
            setup.sync_standards(database)
            print(f"Database schema at {migration.current_revision(database.engine)}")
        else:
            print(migration.current_revision(database.engine) or "None")
    finally:
        database.dispose()
    return 0


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
