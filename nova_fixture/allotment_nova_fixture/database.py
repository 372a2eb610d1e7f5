"""A private, ready-to-serve allotment database for one test.

Every test gets a SQLite file of its own, already migrated and holding the
standard resource classes and traits.  Migrating costs tens of milliseconds,
so it is done once per process into a template, and each test's file is a
page-by-page copy of that template (SQLite's online backup: a millisecond or
two).

A database made here is remembered under its URL while the fixture lives, so
that every ``PlacementFixture`` of the test serving that URL serves the same
``Database`` object, and with it the same in-memory provider world.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sqlite3
import tempfile
import threading

import fixtures
import sqlalchemy as sa
from oslo_config import cfg
from oslo_config import fixture as config_fixture

from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration

_TEMPLATE_LOCK = threading.Lock()
_template: str | None = None
# URL -> the Database a live fixture opened for it.
_OPEN: dict[str, db_mod.Database] = {}


def opened(url: str | None) -> db_mod.Database | None:
    """The Database a live :class:`Database` fixture holds for ``url``."""
    if not url:
        return None
    return _OPEN.get(db_mod.normalise_url(url))


def template_path() -> str:
    """This process's migrated template database (made on first use)."""
    global _template
    with _TEMPLATE_LOCK:
        if _template is None or not os.path.exists(_template):
            directory = tempfile.mkdtemp(prefix="allotment-fixture-template-")
            atexit.register(shutil.rmtree, directory, True)
            path = os.path.join(directory, "template.sqlite")
            database = db_mod.Database(db_mod.create_engine("sqlite:///" + path))
            try:
                migration.upgrade(database.engine)
                setup.sync_standards(database)
            finally:
                database.dispose()
            # Fold the write-ahead log into the file, so that a copy of the
            # file alone is the whole database.
            with contextlib.closing(sqlite3.connect(path)) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            _template = path
        return _template


def _is_empty(path: str) -> bool:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return True
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def fill_from_template(path: str) -> None:
    """Make the empty (or missing) SQLite file at ``path`` a copy of the template."""
    with contextlib.closing(sqlite3.connect(template_path())) as src, \
            contextlib.closing(sqlite3.connect(path)) as dst:
        src.backup(dst)


def _sqlite_file(url: str) -> str | None:
    """The file a SQLite URL names; None for in-memory or another backend."""
    parsed = sa.engine.make_url(db_mod.normalise_url(url))
    if parsed.get_backend_name() != "sqlite":
        return None
    if not parsed.database or parsed.database == ":memory:" or \
            parsed.database.startswith("file::memory:") or \
            "memory" in str(parsed.query.get("mode", "")):
        return None
    return parsed.database


def _in_memory_sqlite(url: str | None) -> bool:
    if not url:
        return True
    parsed = sa.engine.make_url(db_mod.normalise_url(url))
    return parsed.get_backend_name() == "sqlite" and _sqlite_file(url) is None


class Database(fixtures.Fixture):
    """A fresh allotment database for the test, at
    ``[placement_database] connection``.

    With ``set_config`` the ``connection`` option is registered when it is not
    yet, and an unset connection becomes a private database.  An in-memory
    SQLite URL (``sqlite://``, upstream's default) would be a different,
    empty database on every connection; it is replaced by a private file, and
    the option is pointed at that file so that everything configured from it
    later in the test finds the same data.  A SQLite file that is missing or
    empty (nova's threading mode prepares one) is filled from the template;
    one that already holds a database is left to the service, which migrates
    SQLite on start; a server database is migrated in place.
    """

    def __init__(self, conf_fixture: config_fixture.Config, set_config: bool = False) -> None:
        super().__init__()
        self.conf_fixture = conf_fixture
        self.set_config = set_config
        self.url: str | None = None
        self.database: db_mod.Database | None = None

    def _setUp(self) -> None:
        conf = self.conf_fixture.conf
        if self.set_config:
            with contextlib.suppress(cfg.DuplicateOptError):
                self.conf_fixture.register_opt(cfg.StrOpt("connection"),
                                               group="placement_database")
        url = conf.placement_database.connection
        if _in_memory_sqlite(url):
            directory = tempfile.mkdtemp(prefix="allotment-fixture-")
            self.addCleanup(shutil.rmtree, directory, True)
            url = "sqlite:///" + os.path.join(directory, "placement.sqlite")
            self.conf_fixture.config(connection=url, group="placement_database")
        self.url = db_mod.normalise_url(url)

        path = _sqlite_file(self.url)
        if path is not None and _is_empty(path):
            fill_from_template(path)
        database = self.database = db_mod.Database(db_mod.create_engine(self.url))
        self.addCleanup(self._close, database)
        if path is None:
            migration.upgrade(database.engine)
            setup.sync_standards(database)
        _OPEN[self.url] = database

    def _close(self, database: db_mod.Database) -> None:
        if _OPEN.get(self.url) is database:
            del _OPEN[self.url]
        database.dispose()
