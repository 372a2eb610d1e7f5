"""Databases allotment must not take over: refused, and left as they were.

An upstream database at an older revision, a database of something else, an
upstream schema with a table or a column gone: ``allotment-manage db sync``
exits non-zero with a message saying what it found and what to do, without
a traceback, and every table, column, index and row is as before.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.adoption import dump, manage
from tests.harness.backends import BACKENDS, SERVER_URLS


def _execute(url: str, *statements: str) -> None:
    engine = dump.engine_for(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def _some_rows(url: str) -> None:
    """A little of what an upstream deployment holds, at any revision."""
    _execute(url,
             "INSERT INTO traits (id, name, created_at) VALUES (1, 'CUSTOM_KEEP', "
             "'2025-01-01 00:00:00')",
             "INSERT INTO projects (id, external_id, created_at) VALUES (1, 'p', "
             "'2025-01-01 00:00:00')",
             "INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id,"
             " created_at) VALUES (1, '9a1b0d52-3c7e-4bb1-8a55-0f6e4b0c1d2e', 'keep', 3, 1,"
             " '2025-01-01 00:00:00')")


def _refused(tmp_path, url: str, *args: str) -> manage.Result:
    before = dump.everything(url)
    result = manage.allotment_manage(tmp_path / "manage", url, *args)
    after = dump.everything(url)
    assert result.code != 0, f"{' '.join(args)} was not refused:\n{result.text}"
    assert "Traceback" not in result.text, result.text
    assert result.text.strip(), "refused without a message"
    assert not dump.differences(before, after), "\n".join(dump.differences(before, after))
    return result


# The revision before the head on every backend; the first one on SQLite.
OLDER = [(backend, "422ece571366") for backend in BACKENDS] + [("sqlite", "b4ed3a175331")]


@pytest.mark.parametrize(("backend", "revision"), OLDER)
def test_an_older_upstream_revision_is_refused(backend, revision, fresh_database, tmp_path):
    url = fresh_database(backend)
    migrated = manage.upstream_upgrade_to(tmp_path, url, revision)
    assert migrated.code == 0, migrated.text
    _some_rows(url)
    result = _refused(tmp_path, url, "db", "sync")
    # Which revision it found, and that upstream's own sync comes first.
    assert revision in result.text, result.text
    assert "placement-manage" in result.text, result.text


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_database_of_something_else_is_refused(backend, fresh_database, tmp_path):
    url = fresh_database(backend)
    _execute(url,
             "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL)",
             "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL,"
             " total INTEGER NOT NULL)",
             "INSERT INTO customers (id, name) VALUES (1, 'ada'), (2, 'grace')",
             "INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 30), (2, 2, 12)")
    result = _refused(tmp_path, url, "db", "sync")
    assert "customers" in result.text or "orders" in result.text, result.text
    # It is no allotment database either: nothing to hand back.
    _refused(tmp_path, url, "db", "downgrade", "upstream")


_DAMAGE = {
    "a table gone": "DROP TABLE users",
    "a column gone": "ALTER TABLE inventories DROP COLUMN step_size",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("damage", sorted(_DAMAGE))
def test_a_damaged_upstream_schema_is_refused(backend, damage, fresh_database, tmp_path):
    url = fresh_database(backend)
    synced = manage.placement_manage(tmp_path, url, "db", "sync")
    assert synced.code == 0, synced.text
    _some_rows(url)
    _execute(url, _DAMAGE[damage])
    result = _refused(tmp_path, url, "db", "sync")
    missing = "users" if damage == "a table gone" else "step_size"
    assert missing in result.text, result.text


@pytest.mark.skipif("mysql" not in SERVER_URLS, reason="needs a MySQL/MariaDB server")
def test_hand_back_names_what_upstream_collation_would_merge(fresh_database, tmp_path):
    """Names that differ only in letter case are two names under allotment's
    binary collation and one under upstream's: the hand-back says which,
    keeps every row, and finishes once one of them is renamed."""
    url = fresh_database("mysql")
    assert manage.placement_manage(tmp_path, url, "db", "sync").code == 0
    adopted = manage.allotment_manage(tmp_path / "manage", url, "db", "sync")
    assert adopted.code == 0, adopted.text
    for rp, name in ((1, "Compute-A"), (2, "compute-a")):
        _execute(url, "INSERT INTO resource_providers (id, uuid, name, generation,"
                 f" root_provider_id, created_at) VALUES ({rp}, '{rp:08d}-0000-4000-8000-"
                 f"000000000000', '{name}', 0, {rp}, '2025-01-01 00:00:00')")
    rows = dump.rows(url)["resource_providers"]
    result = manage.allotment_manage(tmp_path / "manage", url, "db", "downgrade", "upstream")
    assert result.code != 0, result.text
    assert "Traceback" not in result.text, result.text
    assert "Compute-A" in result.text or "compute-a" in result.text, result.text
    assert dump.rows(url)["resource_providers"] == rows

    _execute(url, "UPDATE resource_providers SET name = 'compute-b' WHERE id = 2")
    again = manage.allotment_manage(tmp_path / "manage", url, "db", "downgrade", "upstream")
    assert again.code == 0, again.text
    fresh = fresh_database("mysql")
    assert manage.placement_manage(tmp_path, fresh, "db", "sync").code == 0
    differences = dump.differences(dump.schema(fresh), dump.schema(url))
    assert not differences, "\n".join(differences)
