"""The Placement fixture nova's functional tests import, served by allotment:
the import paths, constructor and hook nova uses, a database of each test's
own, and the database shared by fixtures built apart (as nova's
regressions.test_bug_1679750 builds them)."""

from __future__ import annotations

import gc
import os
import sqlite3
import uuid
import weakref

import pytest
import requests
from allotment_nova_fixture import database as database_mod
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_policy import opts as policy_opts
from placement import conf as placement_conf
from placement.tests import fixtures as placement_db
from placement.tests.functional.fixtures import placement as placement_fixtures

from allotment.storage import migration

HEADERS = {"x-auth-token": "admin", "OpenStack-API-Version": "placement latest"}


def get(fixture, path: str) -> requests.Response:
    return requests.get(fixture.endpoint + path, headers=HEADERS, timeout=10)


def make_provider(fixture, name: str) -> str:
    rp = str(uuid.uuid4())
    resp = requests.post(fixture.endpoint + "/resource_providers",
                         json={"name": name, "uuid": rp}, headers=HEADERS, timeout=10)
    assert resp.status_code == 200, resp.text
    return rp


def names(fixture) -> list[str]:
    resp = get(fixture, "/resource_providers")
    assert resp.status_code == 200, resp.text
    return sorted(p["name"] for p in resp.json()["resource_providers"])


@pytest.fixture
def config():
    """An oslo.config fixture on a ConfigOpts of the test's own."""
    fixture = config_fixture.Config(cfg.ConfigOpts())
    fixture.setUp()
    yield fixture
    fixture.cleanUp()


def test_serves_allotment_at_a_placement_endpoint():
    with placement_fixtures.PlacementFixture() as placement:
        assert placement.token == "admin"
        scheme, _, host, path = placement.endpoint.split("/", 3)
        assert (scheme, path) == ("http:", "placement")
        uuid.UUID(host)
        root = get(placement, "/")
        assert root.status_code == 200
        assert root.json()["versions"][0]["max_version"] == "1.39"
        make_provider(placement, "cn1")
        assert names(placement) == ["cn1"]
        # noauth2: a request without a token is refused.
        assert requests.get(placement.endpoint + "/resource_providers",
                            timeout=10).status_code == 401
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(placement.endpoint + "/", timeout=10)


def test_each_fixture_starts_from_an_empty_database():
    with placement_fixtures.PlacementFixture() as first:
        make_provider(first, "cn1")
        classes = get(first, "/resource_classes").json()["resource_classes"]
        assert {"VCPU", "MEMORY_MB", "DISK_GB"} <= {c["name"] for c in classes}
    with placement_fixtures.PlacementFixture() as second:
        assert names(second) == []
        assert first.endpoint != second.endpoint


def test_database_is_copied_from_a_template_not_migrated_per_test(monkeypatch, config):
    """Migrating costs tens of milliseconds: done once per process, and each
    test's database is a copy (the service's start-up check finds it at head)."""
    template = database_mod.template_path()
    runs = []
    monkeypatch.setattr(migration, "upgrade", lambda *a, **k: runs.append(a))
    with placement_db.Database(config, set_config=True) as db:
        assert database_mod.template_path() == template
        assert migration.current_revision(db.database.engine) == \
            migration.head_revision(db.database.engine)
    assert runs == []


def test_legacy_policy_defaults_and_noauth2_whatever_the_caller_defaults(config):
    placement_conf.register_opts(config.conf)
    # What a caller's process (nova) defaults to.
    policy_opts.set_defaults(config.conf, enforce_new_defaults=True)
    assert config.conf.api.auth_strategy == "keystone"
    with placement_fixtures.PlacementFixture(conf_fixture=config, register_opts=False) as p:
        assert config.conf.api.auth_strategy == "noauth2"
        assert config.conf.oslo_policy.enforce_new_defaults is False
        assert names(p) == []


def test_configure_hook_runs_before_the_database_is_made(tmp_path):
    """nova's threading mode points the fixture at an empty WAL file of its
    own in the hook; the fixture fills and serves that file."""
    path = tmp_path / "placement.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    seen = []

    class FileBacked(placement_fixtures.PlacementFixture):
        def _configure_placement(self, conf_fixture):
            super()._configure_placement(conf_fixture)
            seen.append(conf_fixture.conf.placement_database.connection)
            conf_fixture.config(connection=f"sqlite:///{path}", group="placement_database")

    with FileBacked() as placement:
        make_provider(placement, "cn-file")
        with sqlite3.connect(path) as conn:
            stored = conn.execute("SELECT name FROM resource_providers").fetchall()
    assert seen == [None]
    assert stored == [("cn-file",)]


def test_database_fixture_shared_by_fixtures_built_apart(config):
    """The pattern of nova's regressions.test_bug_1679750: one Database
    fixture, then two service fixtures one after the other on its config."""
    placement_conf.register_opts(config.conf)
    db = placement_db.Database(config, set_config=True)
    db.setUp()
    try:
        url = config.conf.placement_database.connection
        assert url.startswith("sqlite:///") and os.path.exists(url[len("sqlite:///"):])
        with placement_fixtures.PlacementFixture(
                conf_fixture=config, db=False, register_opts=False) as first:
            make_provider(first, "cn1")
        with placement_fixtures.PlacementFixture(
                conf_fixture=config, db=False, register_opts=False) as second:
            assert names(second) == ["cn1"]
            # The very database the Database fixture opened, world and all.
            assert second.app.falcon_app is not None
            assert database_mod.opened(url) is db.database
    finally:
        db.cleanUp()
    assert database_mod.opened(url) is None
    assert not os.path.exists(url[len("sqlite:///"):])


def test_database_fixture_replaces_an_in_memory_url(config):
    """``sqlite://`` is a new empty database on every connection: the
    fixture gives the test a file instead, and says so in the config."""
    config.register_opt(cfg.StrOpt("connection"), group="placement_database")
    config.config(connection="sqlite://", group="placement_database")
    with placement_db.Database(config) as db:
        url = config.conf.placement_database.connection
        assert url != "sqlite://" and url == db.url
        with sqlite3.connect(url[len("sqlite:///"):]) as conn:
            assert conn.execute("SELECT count(*) FROM traits").fetchone()[0] > 100


def test_without_intercept_only_configures(config):
    with placement_fixtures.PlacementFixture(conf_fixture=config, use_intercept=False) as p:
        assert p.endpoint is None
        assert config.conf.placement_database.connection.startswith("sqlite:///")


def test_a_finished_fixture_lets_its_database_and_world_go():
    """A process runs thousands of tests: none may keep a world alive."""
    with placement_fixtures.PlacementFixture() as placement:
        make_provider(placement, "cn1")
        database = database_mod.opened(
            placement.conf_fixture.conf.placement_database.connection)
        ref = weakref.ref(database)
        world = weakref.ref(placement.app.runtime.replica.world)
        assert world() is not None
    del database
    gc.collect()
    assert placement.app is None
    assert ref() is None
    assert world() is None
