"""placement-manage: upstream's arguments, output and exit statuses."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import command

from allotment.storage import migration, tables
from tests.deploy.conftest import (
    UPSTREAM_HEAD,
    engine,
    fake_upstream_distribution,
    run,
    tables_of,
    write_conf,
)

EMPTY_TABLE = (
    "+-----------------------+-------------+-----------+\n"
    "|       Migration       | Total Found | Completed |\n"
    "+-----------------------+-------------+-----------+\n"
    "| set_root_provider_ids |      0      |     0     |\n"
    "+-----------------------+-------------+-----------+\n")


def manage(conf, *args):
    return run("placement-manage", "--config-file", str(conf), *args)


def test_db_sync_creates_then_is_idempotent_and_version_is_upstreams(fresh_url, tmp_path):
    conf = write_conf(tmp_path, fresh_url)
    before = manage(conf, "db", "version")
    assert (before.returncode, before.stdout) == (0, "None\n"), before.stderr
    synced = manage(conf, "db", "sync")
    # Upstream's db sync prints nothing when it succeeds.
    assert (synced.returncode, synced.stdout) == (0, ""), synced.stderr
    assert {"resource_providers", "allocations", "placement_changes"} <= tables_of(fresh_url)
    after = manage(conf, "db", "version")
    assert (after.returncode, after.stdout) == (0, f"{UPSTREAM_HEAD}\n")
    again = manage(conf, "db", "sync")
    assert again.returncode == 0, again.stderr


def test_db_sync_adopts_upstreams_database(fresh_url, tmp_path):
    eng = engine(fresh_url)
    # upstream's tables alone, at its last revision, as its own db sync leaves them.
    command.upgrade(migration.alembic_config(eng, upstream=True), UPSTREAM_HEAD)
    assert migration.state(eng).own is None
    conf = write_conf(tmp_path, fresh_url)
    synced = manage(conf, "db", "sync")
    assert synced.returncode == 0, synced.stderr
    assert migration.state(eng).own == migration.head_revision(eng)
    eng.dispose()


def test_db_sync_refuses_a_foreign_schema_and_writes_nothing(fresh_url, tmp_path):
    eng = engine(fresh_url)
    with eng.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"))
    eng.dispose()
    conf = write_conf(tmp_path, fresh_url)
    result = manage(conf, "db", "sync")
    assert result.returncode == 1
    assert "neither upstream Placement's nor allotment's" in result.stderr
    assert "Nothing was changed" in result.stderr
    assert "Traceback" not in result.stderr
    assert tables_of(fresh_url) == {"invoices"}


def test_db_sync_refuses_a_damaged_schema_and_writes_nothing(fresh_url, tmp_path):
    conf = write_conf(tmp_path, fresh_url)
    assert manage(conf, "db", "sync").returncode == 0
    eng = engine(fresh_url)
    # Back to upstream's schema alone, then one of its tables lost.
    migration.hand_back(eng)
    with eng.begin() as conn:
        conn.execute(sa.text("DROP TABLE resource_provider_traits"))
    before = tables_of(fresh_url)
    result = manage(conf, "db", "sync")
    assert result.returncode == 1
    assert "table resource_provider_traits is missing" in result.stderr
    assert tables_of(fresh_url) == before
    assert migration.state(eng).own is None
    eng.dispose()


def test_stamp_writes_a_known_revision_and_refuses_an_unknown_one(sqlite_url, tmp_path):
    conf = write_conf(tmp_path, sqlite_url)
    assert manage(conf, "db", "sync").returncode == 0
    unknown = manage(conf, "db", "stamp", "ffffdeadbeef")
    assert unknown.returncode == 1
    assert "'ffffdeadbeef' is not a revision of Placement's schema" in unknown.stderr
    assert "Nothing was changed" in unknown.stderr
    assert manage(conf, "db", "version").stdout == f"{UPSTREAM_HEAD}\n"
    base = manage(conf, "db", "stamp", "base")
    assert base.returncode == 0, base.stderr
    assert manage(conf, "db", "version").stdout == "None\n"
    head = manage(conf, "db", "stamp", "head")
    assert head.returncode == 0, head.stderr
    assert manage(conf, "db", "version").stdout == f"{UPSTREAM_HEAD}\n"


def test_online_data_migrations_with_nothing_to_do(sqlite_url, tmp_path):
    conf = write_conf(tmp_path, sqlite_url)
    assert manage(conf, "db", "sync").returncode == 0
    result = manage(conf, "db", "online_data_migrations")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Running batches of 50 until complete\n" + EMPTY_TABLE
    limited = manage(conf, "db", "online_data_migrations", "--max-count", "10")
    assert (limited.returncode, limited.stdout) == (0, EMPTY_TABLE)


def test_online_data_migrations_refuses_a_bad_max_count(tmp_path):
    conf = write_conf(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite'}")
    for bad in ("0", "-3", "many"):
        result = manage(conf, "db", "online_data_migrations", "--max-count", bad)
        assert result.returncode == 127
        assert result.stdout == "Must supply a positive value for max_count\n"


def _providers_with_wrong_roots(url: str, count: int) -> None:
    """``count`` parent/child pairs whose children name themselves as root,
    as a program that kept no root would have left them."""
    eng = engine(url)
    rp = tables.resource_providers
    with eng.begin() as conn:
        for i in range(count):
            parent = conn.execute(sa.insert(rp).values(
                uuid=f"00000000-0000-0000-0000-{i:012d}", name=f"parent-{i}",
                generation=0)).inserted_primary_key[0]
            conn.execute(sa.update(rp).where(rp.c.id == parent)
                         .values(root_provider_id=parent))
            child = conn.execute(sa.insert(rp).values(
                uuid=f"11111111-0000-0000-0000-{i:012d}", name=f"child-{i}",
                generation=0, parent_provider_id=parent)).inserted_primary_key[0]
            conn.execute(sa.update(rp).where(rp.c.id == child)
                         .values(root_provider_id=child))
    eng.dispose()


def _wrong_roots(url: str) -> int:
    eng = engine(url)
    rp = tables.resource_providers
    with eng.connect() as conn:
        n = conn.execute(sa.select(sa.func.count()).where(
            rp.c.parent_provider_id.is_not(None),
            rp.c.root_provider_id != rp.c.parent_provider_id)).scalar_one()
    eng.dispose()
    return n


def test_online_data_migrations_repairs_in_batches(fresh_url, tmp_path):
    conf = write_conf(tmp_path, fresh_url)
    assert manage(conf, "db", "sync").returncode == 0
    _providers_with_wrong_roots(fresh_url, 3)
    first = manage(conf, "db", "online_data_migrations", "--max-count", "2")
    # Upstream's status 1: something was done, more may be left.
    assert first.returncode == 1, first.stdout + first.stderr
    assert first.stdout.startswith("2 rows matched query set_root_provider_ids, 2 migrated\n")
    assert "| set_root_provider_ids |      2      |     2     |" in first.stdout
    assert _wrong_roots(fresh_url) == 1
    rest = manage(conf, "db", "online_data_migrations")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    assert "1 rows matched query set_root_provider_ids, 1 migrated" in rest.stdout
    assert "| set_root_provider_ids |      1      |     1     |" in rest.stdout
    assert _wrong_roots(fresh_url) == 0


def test_refuses_to_start_beside_openstack_placement(tmp_path):
    conf = write_conf(tmp_path, f"sqlite:///{tmp_path / 'p.sqlite'}")
    env = fake_upstream_distribution(tmp_path / "site")
    for argv in (["placement-manage", "--config-file", str(conf), "db", "sync"],
                    ["allotment-manage", "--config-file", str(conf), "db", "sync"]):
        result = run(*argv, env=env)
        assert result.returncode == 1
        assert "openstack-placement 16.0.0" in result.stderr
        assert "allotment-placement" in result.stderr
    assert not (tmp_path / "p.sqlite").exists() or tables_of(
        f"sqlite:///{tmp_path / 'p.sqlite'}") == set()
