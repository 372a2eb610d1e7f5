"""placement-manage: upstream Placement's database command, served by allotment.

Deployment tools call ``placement-manage db sync`` (kolla-ansible's
bootstrap, openstack-ansible, devstack) and ``placement-manage db
online_data_migrations`` (upgrade plays) and read nothing but the exit
status and, for the latter, the table.  So the commands take upstream's
arguments (oslo.config's ``--config-file`` / ``--config-dir``, one
sub-command) and answer with upstream's output and exit statuses:

* ``db sync``: what ``allotment-manage db sync`` does (create the schema, or
  adopt upstream's database in place); silent on success.  A database this
  cannot migrate (a foreign or damaged schema, an older upstream) is
  refused before anything is written: the reason on standard error, exit 1.
* ``db version``: the revision of upstream's tables, which allotment keeps
  at upstream's last (what upstream prints).
* ``db stamp REV``: write one of upstream's revisions without migrating; an
  unknown one is refused, nothing written.
* ``db online_data_migrations [--max-count N]``: upstream's batches and
  table; 0 when nothing is left, 1 when a limited run did something, 2 when
  a migration failed and nothing else moved, 127 for a bad ``--max-count``.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable

import prettytable
from oslo_config import cfg

from allotment import __version__, distributions
from allotment import conf as conf_mod
from allotment.service import online_migrations, setup
from allotment.storage import db as db_mod
from allotment.storage import migration

LOG = logging.getLogger(__name__)
# Upstream's batch size when no --max-count is given.
DEFAULT_BATCH = 50


class DbCommands:
    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf

    def _database(self) -> db_mod.Database:
        return db_mod.Database.from_conf(self.conf)

    def sync(self) -> int:
        database = self._database()
        try:
            migration.upgrade(database.engine)
            setup.sync_standards(database)
        finally:
            database.dispose()
        return 0

    def version(self) -> int:
        database = self._database()
        try:
            print(migration.upstream_revision(database.engine))
        finally:
            database.dispose()
        return 0

    def stamp(self) -> int:
        database = self._database()
        try:
            migration.stamp_upstream(database.engine, self.conf.command.version)
        finally:
            database.dispose()
        return 0

    def online_data_migrations(self) -> int:
        max_count = self.conf.command.max_count
        limited = max_count is not None
        if limited:
            try:
                max_count = int(max_count)
            except ValueError:
                max_count = 0
            if max_count < 1:
                print("Must supply a positive value for max_count")
                return 127
        else:
            max_count = DEFAULT_BATCH
            print(f"Running batches of {max_count} until complete")
        database = self._database()
        try:
            return _run_online(database, max_count, limited)
        finally:
            database.dispose()


def _run_online(database: db_mod.Database, max_count: int, limited: bool) -> int:
    totals: dict[str, tuple[int, int]] = {}
    failed = False
    while True:
        ran, failed = _one_batch(database, max_count, totals)
        if limited or ran == 0:
            break
    table = prettytable.PrettyTable(["Migration", "Total Found", "Completed"])
    for name, (found, done) in totals.items():
        table.add_row([name, found, done])
    print(table)
    if failed and not (limited and ran):
        print("Some migrations failed unexpectedly. Check log for details.")
        return 2
    return 1 if ran else 0


def _one_batch(database: db_mod.Database, max_count: int,
               totals: dict[str, tuple[int, int]]) -> tuple[int, bool]:
    """Run each migration once within ``max_count`` changes; adds to
    ``totals``; ``(changes made, whether any migration failed)``."""
    ran, failed = 0, False
    for step in online_migrations.MIGRATIONS:
        name = step.__name__
        try:
            found, done = step(database, max_count - ran)
        except Exception:
            LOG.exception("Error attempting to run %s", name)
            print(f"Error attempting to run {name}")
            failed, found, done = True, 0, 0
        if found:
            print(f"{found} rows matched query {name}, {done} migrated")
        before = totals.get(name, (0, 0))
        totals[name] = (before[0] + found, before[1] + done)
        ran += done
        if ran >= max_count:
            break
    return ran, failed


def _add_parsers(subparsers, commands: DbCommands) -> None:
    subparsers.required = False
    db_parser = subparsers.add_parser("db")
    db_parser.set_defaults(func=db_parser.print_help)
    actions = db_parser.add_subparsers(description="database commands")

    def add(name: str, text: str, func: Callable[[], int]):
        parser = actions.add_parser(name, help=text, description=text)
        parser.set_defaults(func=func)
        return parser

    add("sync", "Sync the database to the current version.", commands.sync)
    add("version", "Report the current database version.", commands.version)
    stamp = add("stamp", "Stamp the revision table with the given version.", commands.stamp)
    stamp.add_argument("version", help="the version to stamp")
    online = add("online_data_migrations", "Run the online data migrations.",
                 commands.online_data_migrations)
    online.add_argument("--max-count", metavar="<number>",
                        help="Maximum number of objects to consider")


def main(argv: list[str] | None = None) -> int:
    distributions.refuse_if_shadowed()
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    commands = DbCommands(conf)
    conf.register_cli_opt(cfg.SubCommandOpt(
        "db", dest="command", title="Command", help="Available DB commands",
        handler=functools.partial(_add_parsers, commands=commands)))
    # Upstream's command reads the files given, else oslo.config's usual
    # places (not $OS_PLACEMENT_CONFIG_DIR, which only its WSGI app reads).
    conf(sys.argv[1:] if argv is None else argv, project="placement",
         version=__version__, default_config_files=None)
    logging.basicConfig(level=logging.DEBUG if conf.debug else logging.WARNING,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    try:
        func = conf.command.func
    except cfg.NoSuchOptError:
        conf.print_help()
        return 1
    try:
        return func() or 0
    except migration.SchemaError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        LOG.debug("placement-manage failed", exc_info=True)
        print(f"ERROR: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
