"""Fixtures shared by every storage-touching test.

Each such test runs once on SQLite and once on every database server the
environment names (``ALLOTMENT_TEST_PG_URL``, ``ALLOTMENT_TEST_MYSQL_URL``;
``scripts/test`` starts both).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from allotment import conf as conf_mod
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import feed, migration, tables
from tests.harness import backends
from tests.harness.backends import BACKENDS
from tests.harness.wsgi_client import Client

# Tables holding user data, children before parents.
_DATA_TABLES = (
    tables.allocations, tables.consumers, tables.projects, tables.users,
    tables.consumer_types, tables.inventories, tables.resource_provider_traits,
    tables.resource_provider_aggregates, tables.placement_aggregates,
    tables.resource_providers,
)


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory) -> str:
    """A freshly created, empty database on one backend."""
    url = backends.create_database(request.param, tmp_path_factory.mktemp(request.param))
    yield url
    backends.drop_database(request.param, url)


@pytest.fixture(scope="session")
def database(database_url) -> db_mod.Database:
    """The migrated database of this backend, shared by the session."""
    database = db_mod.Database(db_mod.create_engine(database_url))
    migration.upgrade(database.engine)
    setup.sync_standards(database)
    yield database
    database.dispose()


def clean(database: db_mod.Database) -> None:
    """Remove user data, keep the schema and the standard names; every
    process reloads its world (a reset in the change feed)."""
    with database.write() as conn:
        feed.note_reset(conn)
        conn.execute(sa.update(tables.resource_providers)
                     .values(parent_provider_id=None, root_provider_id=None))
        for table in _DATA_TABLES:
            conn.execute(sa.delete(table))
        for table in (tables.resource_classes, tables.traits):
            conn.execute(sa.delete(table).where(table.c.name.startswith("CUSTOM_")))


@pytest.fixture
def db(database) -> db_mod.Database:
    clean(database)
    return database


@pytest.fixture
def backend(database) -> str:
    return database.backend


def make_conf(database_url: str, **groups):
    overrides = {
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": database_url},
    }
    for group, values in groups.items():
        overrides.setdefault(group, {}).update(values)
    return conf_mod.load(config_files=[], overrides=overrides)


@pytest.fixture
def conf_overrides() -> dict:
    """Override in a test module to configure the app, e.g.
    ``{"placement": {"max_allocation_candidates": 5}}``."""
    return {}


@pytest.fixture
def conf(database_url, conf_overrides):
    return make_conf(database_url, **conf_overrides)


@pytest.fixture
def app(conf, db):
    from allotment.server.app import create_app

    return create_app(conf, db=db)


@pytest.fixture
def api(app) -> Client:
    """Client at the latest microversion, authenticated as admin."""
    return Client(app)


# The upstream gabbi lane's counts per backend (tests/gabbi), summed from
# each file's report so that they add up across test workers too.
_GABBI: dict[str, list[int]] = {}


def pytest_runtest_logreport(report) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == "gabbi":
            backend, *counts = value
            totals = _GABBI.setdefault(backend, [0, 0, 0, 0])
            totals[0] += 1
            for k, n in enumerate(counts, 1):
                totals[k] += n


def pytest_terminal_summary(terminalreporter) -> None:
    for backend, (files, passed, failed, skipped) in sorted(_GABBI.items()):
        terminalreporter.write_line(
            f"upstream gabbi suite on {backend}: {files} files, {passed} passed, "
            f"{failed} failed, {skipped} skipped (cannot run over HTTP), "
            f"of {passed + failed + skipped} tests")
