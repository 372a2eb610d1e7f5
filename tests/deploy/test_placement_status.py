"""placement-status upgrade check: oslo.upgradecheck's output and exit
statuses (0 success, 1 warning, 2 failure), with allotment's checks."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from alembic import command

from allotment.storage import foreign, migration
from tests.deploy.conftest import engine, fake_upstream_distribution, run, write_conf
from tests.harness import backends

CHECKS = ["Placement Distributions", "Database Schema", "Change Feed", "Database Privileges",
          "Galera Settings", "Missing Root Provider IDs", "Incomplete Consumers",
          "Policy File JSON to YAML Migration", "Policy File Rules"]


def status(conf, *extra, env=None):
    result = run("placement-status", "--config-file", str(conf), "upgrade", "check",
                 "--json", *extra, env=env)
    assert result.returncode in (0, 1, 2), result.stdout + result.stderr
    return result.returncode, {c["check"]: (c["result"], c["details"])
                               for c in json.loads(result.stdout)["checks"]}


def synced(tmp_path, url, extra=""):
    conf = write_conf(tmp_path, url, extra)
    result = run("placement-manage", "--config-file", str(conf), "db", "sync")
    assert result.returncode == 0, result.stderr
    return conf


def test_all_succeed_on_an_adopted_database(fresh_url, tmp_path):
    conf = synced(tmp_path, fresh_url)
    code, checks = status(conf)
    assert list(checks) == CHECKS
    assert code == 0, checks
    assert {name: result for name, (result, _) in checks.items()} == dict.fromkeys(CHECKS, 0)
    table = run("placement-status", "--config-file", str(conf), "upgrade", "check")
    assert table.returncode == 0
    assert "| Upgrade Check Results" in table.stdout
    assert "| Check: Change Feed" in table.stdout
    assert "| Result: Success" in table.stdout


def test_an_empty_database_fails(sqlite_url, tmp_path):
    code, checks = status(write_conf(tmp_path, sqlite_url))
    assert code == 2
    result, details = checks["Database Schema"]
    assert result == 2
    assert "placement-manage db sync" in details


def test_upstreams_database_not_adopted_warns(fresh_url, tmp_path):
    eng = engine(fresh_url)
    command.upgrade(migration.alembic_config(eng, upstream=True), migration.UPSTREAM_HEAD)
    eng.dispose()
    code, checks = status(write_conf(tmp_path, fresh_url))
    assert code == 1, checks
    result, details = checks["Database Schema"]
    assert result == 1
    assert "not adopted yet" in details
    assert checks["Change Feed"][0] == 0


def test_a_missing_trigger_fails_naming_it(fresh_url, tmp_path):
    conf = synced(tmp_path, fresh_url)
    eng = engine(fresh_url)
    name, table, _event = foreign.all_triggers()[4]
    with eng.begin() as conn:
        if eng.dialect.name == "postgresql":
            conn.execute(sa.text(f"DROP TRIGGER {name} ON {table}"))
        else:
            conn.execute(sa.text(f"DROP TRIGGER {name}"))
    eng.dispose()
    code, checks = status(conf)
    assert code == 2
    result, details = checks["Change Feed"]
    assert result == 2
    assert name in details
    assert "placement-manage db sync" in details
    # db sync puts it back.
    assert run("placement-manage", "--config-file", str(conf), "db", "sync").returncode == 0
    assert status(conf)[0] == 0


def test_a_damaged_schema_fails(sqlite_url, tmp_path):
    conf = synced(tmp_path, sqlite_url)
    eng = engine(sqlite_url)
    migration.hand_back(eng)
    with eng.begin() as conn:
        conn.execute(sa.text("DROP TABLE resource_provider_traits"))
    eng.dispose()
    code, checks = status(conf)
    assert code == 2
    assert "table resource_provider_traits is missing" in checks["Database Schema"][1]


def test_wrong_roots_warn_to_run_online_data_migrations(fresh_url, tmp_path):
    from tests.deploy.test_placement_manage import _providers_with_wrong_roots

    conf = synced(tmp_path, fresh_url)
    _providers_with_wrong_roots(fresh_url, 1)
    code, checks = status(conf)
    assert code == 1
    assert checks["Missing Root Provider IDs"][0] == 1
    assert "online_data_migrations" in checks["Missing Root Provider IDs"][1]


def test_policy_file_rules_whose_default_changed_warn(tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:list": "role:admin"\n'
                      '"admin_or_service_api": "role:admin"\n'
                      '"placement:resource_provider:lsit": "role:admin"\n')
    conf = synced(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite'}",
                  f"[oslo_policy]\npolicy_file = {policy}\n")
    code, checks = status(conf)
    assert code == 1
    result, details = checks["Policy File Rules"]
    assert result == 1
    assert "'admin_or_service_api' sets 'role:admin'" in details
    assert "'placement:resource_provider:lsit' is not one of Placement's rules" in details
    # A custom rule on a rule whose default did not change is the operator's own.
    assert "resource_providers:list'" not in details


def test_a_json_policy_file_fails(tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text('{"admin_api": "role:admin"}')
    conf = synced(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite'}",
                  f"[oslo_policy]\npolicy_file = {policy}\n")
    code, checks = status(conf)
    assert code == 2
    assert checks["Policy File JSON to YAML Migration"][0] == 2


def test_both_distributions_installed_fails(tmp_path):
    conf = synced(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite'}")
    code, checks = status(conf, env=fake_upstream_distribution(tmp_path / "site"))
    assert code == 2
    result, details = checks["Placement Distributions"]
    assert result == 2
    assert "openstack-placement 16.0.0" in details and "allotment-placement" in details


@pytest.mark.skipif("mysql" not in backends.SERVER_URLS, reason="needs MariaDB")
def test_mysql_user_lacking_trigger_fails_naming_it(tmp_path):
    url = backends.create_database("mysql", tmp_path, "allotment_deploy")
    admin = engine(url)
    database = sa.engine.make_url(url).database
    user = f"u{database[-12:]}"
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'"))
            conn.execute(sa.text(
                f"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, INDEX "
                f"ON `{database}`.* TO '{user}'@'%'"))
        conf = synced(tmp_path, url)
        limited = (sa.engine.make_url(url).set(username=user, password="pw")
                   .render_as_string(hide_password=False))
        (tmp_path / "limited").mkdir()
        code, checks = status(write_conf(tmp_path / "limited", limited))
        assert code == 2, checks
        result, details = checks["Database Privileges"]
        assert result == 2
        assert "TRIGGER" in details
        assert "SELECT" not in details
        assert status(conf)[1]["Database Privileges"][0] == 0
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP USER IF EXISTS '{user}'@'%'"))
        admin.dispose()
        backends.drop_database("mysql", url)
