"""Fixtures shared by every storage-touching test.

Each such test runs once on SQLite and, when ``ALLOTMENT_TEST_PG_URL`` names
a PostgreSQL server (``scripts/test`` starts one), once on PostgreSQL.
"""

from __future__ import annotations

import os
import uuid

import pytest
import sqlalchemy as sa

from allotment import conf as conf_mod
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import feed, migration, tables
from tests.client import Client

PG_URL = os.environ.get("ALLOTMENT_TEST_PG_URL")
BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else [])

# Tables holding user data, children before parents.
_DATA_TABLES = (
    tables.allocations, tables.consumers, tables.projects, tables.users,
    tables.consumer_types, tables.inventories, tables.resource_provider_traits,
    tables.resource_provider_aggregates, tables.placement_aggregates,
    tables.resource_providers,
)


def _create_pg_database() -> tuple[str, str]:
    name = f"allotment_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(db_mod.normalise_url(PG_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = sa.engine.make_url(db_mod.normalise_url(PG_URL)).set(database=name)
    return url.render_as_string(hide_password=False), name


def _drop_pg_database(name: str) -> None:
    admin = sa.create_engine(db_mod.normalise_url(PG_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory) -> str:
    """A freshly created, empty database on one backend."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "allotment.sqlite"
        yield f"sqlite:///{path}"
        return
    url, name = _create_pg_database()
    yield url
    _drop_pg_database(name)


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
    from allotment.api.app import create_app

    return create_app(conf, db=db)


@pytest.fixture
def api(app) -> Client:
    """Client at the latest microversion, authenticated as admin."""
    return Client(app)
