"""Taking over upstream Placement's database, and handing it back.

Databases here are made by upstream Placement 16.0.0's own
``placement-manage db sync`` (installed in a venv of its own, see
tests/harness/upstream.py), on every backend the suite runs on.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from allotment.storage import clock, foreign, migration, tables
from allotment.storage import db as db_mod
from allotment.world.sync import Replica
from tests.harness import backends
from tests.harness.backends import BACKENDS
from tests.harness.servers import upstream_manage

pytestmark = pytest.mark.slow
OURS = ("placement_changes", "placement_feed_state", "allotment_writer",
        "allotment_adoption", "allotment_epoch", migration.OWN_VERSIONS)


@pytest.fixture(params=BACKENDS)
def backend_name(request) -> str:
    return request.param


@pytest.fixture
def fresh_url(backend_name, tmp_path):
    url = backends.create_database(backend_name, tmp_path)
    yield url
    backends.drop_database(backend_name, url)


@pytest.fixture
def upstream_url(fresh_url, tmp_path):
    """An empty database as upstream Placement 16.0.0 creates it."""
    upstream_manage(fresh_url, tmp_path / "upstream", "db", "sync")
    return fresh_url


def plain_engine(url: str) -> sa.Engine:
    """A connection as any other program makes one: not marked as allotment's."""
    return sa.create_engine(db_mod.normalise_url(url))


def schema(url: str) -> dict:
    """Upstream's tables as the database describes them."""
    engine = plain_engine(url)
    try:
        inspector = sa.inspect(engine)
        found = {}
        for name in sorted(inspector.get_table_names()):
            if name in OURS:
                continue
            found[name] = {
                "columns": [(c["name"], repr(c["type"]), c["nullable"])
                            for c in inspector.get_columns(name)],
                "pk": inspector.get_pk_constraint(name)["constrained_columns"],
                "unique": sorted((u["name"], tuple(u["column_names"]))
                                 for u in inspector.get_unique_constraints(name)),
                "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                                  for i in inspector.get_indexes(name)),
                "fks": sorted((tuple(f["constrained_columns"]), f["referred_table"],
                               tuple(f["referred_columns"]))
                              for f in inspector.get_foreign_keys(name)),
            }
        return found
    finally:
        engine.dispose()


def dump(url: str, without: str | None = None) -> dict:
    """Every row of upstream's tables (but ``without``)."""
    engine = plain_engine(url)
    try:
        with engine.connect() as conn:
            return {t.name: sorted(tuple(row) for row in conn.execute(sa.select(t)))
                    for t in tables.UPSTREAM_TABLES if t.name != without}
    finally:
        engine.dispose()


def fill(url: str) -> dict[str, str]:
    """A small world written as upstream writes it: a host with a NUMA child,
    inventory of a standard and a custom class, a trait, an aggregate and a
    consumer holding resources on both."""
    ids = {"root": str(uuid.uuid4()), "numa": str(uuid.uuid4()),
           "consumer": str(uuid.uuid4()), "agg": str(uuid.uuid4())}
    engine = plain_engine(url)
    now = clock.utcnow()
    with engine.begin() as conn:
        if conn.dialect.name == "mysql":  # as upstream: VCPU's id is 0
            conn.exec_driver_sql(
                "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')")
        names = {n: i for i, n in conn.execute(sa.text(
            "SELECT id, name FROM resource_classes"))}
        if "VCPU" not in names:  # upstream syncs them when its API starts
            for index, name in enumerate(["VCPU", "MEMORY_MB", "DISK_GB"]):
                conn.execute(sa.insert(tables.resource_classes).values(
                    id=index, name=name, created_at=now))
        conn.execute(sa.insert(tables.resource_classes).values(
            id=10000, name="CUSTOM_GOLD", created_at=now))
        rp = tables.resource_providers
        conn.execute(sa.insert(rp).values(uuid=ids["root"], name="host-1", generation=3,
                                          created_at=now))
        root = conn.execute(sa.select(rp.c.id).where(rp.c.uuid == ids["root"])).scalar()
        conn.execute(sa.update(rp).where(rp.c.id == root).values(root_provider_id=root))
        conn.execute(sa.insert(rp).values(uuid=ids["numa"], name="host-1-numa0",
                                          generation=2, root_provider_id=root,
                                          parent_provider_id=root, created_at=now))
        numa = conn.execute(sa.select(rp.c.id).where(rp.c.uuid == ids["numa"])).scalar()
        for pid, cid, total in ((root, 2, 1000), (root, 10000, 4), (numa, 0, 16)):
            conn.execute(sa.insert(tables.inventories).values(
                resource_provider_id=pid, resource_class_id=cid, total=total, reserved=0,
                min_unit=1, max_unit=total, step_size=1, allocation_ratio=1.0,
                created_at=now))
        conn.execute(sa.insert(tables.traits).values(name="CUSTOM_FAST", created_at=now))
        trait = conn.execute(sa.select(tables.traits.c.id).where(
            tables.traits.c.name == "CUSTOM_FAST")).scalar()
        conn.execute(sa.insert(tables.resource_provider_traits).values(
            trait_id=trait, resource_provider_id=numa, created_at=now))
        conn.execute(sa.insert(tables.placement_aggregates).values(uuid=ids["agg"],
                                                                   created_at=now))
        agg = conn.execute(sa.select(tables.placement_aggregates.c.id)).scalar()
        conn.execute(sa.insert(tables.resource_provider_aggregates).values(
            resource_provider_id=root, aggregate_id=agg, created_at=now))
        conn.execute(sa.insert(tables.projects).values(external_id="p1", created_at=now))
        conn.execute(sa.insert(tables.users).values(external_id="u1", created_at=now))
        conn.execute(sa.insert(tables.consumers).values(
            uuid=ids["consumer"], project_id=1, user_id=1, generation=4, created_at=now))
        for pid, cid, used in ((root, 2, 100), (numa, 0, 3), (root, 10000, 1)):
            conn.execute(sa.insert(tables.allocations).values(
                resource_provider_id=pid, consumer_id=ids["consumer"],
                resource_class_id=cid, used=used, created_at=now))
    engine.dispose()
    return ids


def open_db(url: str) -> db_mod.Database:
    return db_mod.Database(db_mod.create_engine(url))


def test_allotment_creates_exactly_upstream_s_tables(backend_name, fresh_url, tmp_path):
    """An empty database made by allotment and handed back is the database
    upstream's own db sync makes."""
    (tmp_path / "other").mkdir()
    upstream = backends.create_database(backend_name, tmp_path / "other")
    try:
        upstream_manage(upstream, tmp_path / "upstream", "db", "sync")
        db = open_db(fresh_url)
        migration.upgrade(db.engine)
        migration.hand_back(db.engine)
        db.dispose()
        assert schema(fresh_url) == schema(upstream)
        checked = upstream_manage(fresh_url, tmp_path / "check", "db", "version")
        assert checked.stdout.strip().endswith(migration.UPSTREAM_HEAD)
    finally:
        backends.drop_database(backend_name, upstream)


def test_adopting_and_handing_back_keeps_every_row(upstream_url, tmp_path):
    ids = fill(upstream_url)
    before, shape = dump(upstream_url), schema(upstream_url)
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    assert migration.current_revision(db.engine) == migration.head_revision(db.engine)
    assert dump(upstream_url) == before
    with db.read() as conn:
        assert foreign.installed(conn) == {name for name, _, _ in foreign.all_triggers()}
    replica = Replica(db)
    with replica.current() as world:
        assert set(world.uuid_of_id.values()) == {ids["root"], ids["numa"]}
    migration.hand_back(db.engine)
    db.dispose()
    assert dump(upstream_url) == before
    assert schema(upstream_url) == shape
    engine = plain_engine(upstream_url)
    with engine.connect() as conn:
        left = set(sa.inspect(conn).get_table_names()) & set(OURS)
        assert left == set()
        assert foreign.installed(conn) == set()
    engine.dispose()
    # Upstream finds its schema current: its db sync has nothing to do.
    synced = upstream_manage(upstream_url, tmp_path / "again", "db", "sync")
    assert synced.returncode == 0
    assert dump(upstream_url) == before


def test_upstream_s_tools_see_their_own_revision_while_allotment_serves(upstream_url,
                                                                        tmp_path):
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    db.dispose()
    version = upstream_manage(upstream_url, tmp_path / "v", "db", "version")
    assert version.stdout.strip().endswith(migration.UPSTREAM_HEAD)
    synced = upstream_manage(upstream_url, tmp_path / "s", "db", "sync")
    assert synced.returncode == 0, synced.stderr


def test_an_older_upstream_revision_is_refused_untouched(upstream_url):
    engine = plain_engine(upstream_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '422ece571366'")
    engine.dispose()
    before, shape = dump(upstream_url), schema(upstream_url)
    db = open_db(upstream_url)
    with pytest.raises(migration.SchemaError, match="placement-manage db sync"):
        migration.upgrade(db.engine)
    db.dispose()
    assert (dump(upstream_url), schema(upstream_url)) == (before, shape)


def test_a_database_of_something_else_is_refused_untouched(fresh_url):
    engine = plain_engine(fresh_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    engine.dispose()
    db = open_db(fresh_url)
    with pytest.raises(migration.SchemaError, match="neither upstream Placement's nor"):
        migration.upgrade(db.engine)
    with db.engine.connect() as conn:
        assert set(sa.inspect(conn).get_table_names()) == {"invoices"}
    db.dispose()


def test_a_damaged_schema_is_refused_untouched(upstream_url):
    fill(upstream_url)
    engine = plain_engine(upstream_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE resource_provider_traits")
    engine.dispose()
    before = dump(upstream_url, without="resource_provider_traits")
    db = open_db(upstream_url)
    with pytest.raises(migration.SchemaError, match="resource_provider_traits is missing"):
        migration.upgrade(db.engine)
    assert migration.current_revision(db.engine) is None
    db.dispose()
    assert dump(upstream_url, without="resource_provider_traits") == before


def test_an_interrupted_adoption_leaves_the_data_and_can_run_again(upstream_url,
                                                                   monkeypatch):
    fill(upstream_url)
    before = dump(upstream_url)
    db = open_db(upstream_url)

    def fail(conn):
        raise RuntimeError("connection lost")

    monkeypatch.setattr(foreign, "install", fail)
    with pytest.raises(RuntimeError):
        migration.upgrade(db.engine)
    assert dump(upstream_url) == before
    assert migration.current_revision(db.engine) is None
    if db.backend != "mysql":
        # One transaction: nothing of the run was kept.
        with db.engine.connect() as conn:
            assert not set(sa.inspect(conn).get_table_names()) & set(OURS)
    monkeypatch.undo()
    migration.upgrade(db.engine)
    assert migration.current_revision(db.engine) == migration.head_revision(db.engine)
    assert dump(upstream_url) == before
    db.dispose()


def test_writes_of_other_programs_reach_the_world_and_ours_are_not_doubled(upstream_url):
    ids = fill(upstream_url)
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    replica = Replica(db)
    with replica.current() as world:
        root = {u: i for i, u in world.uuid_of_id.items()}[ids["root"]]
    # Another program (upstream's API, say) claims and adds a provider.
    engine = plain_engine(upstream_url)
    now = clock.utcnow()
    newcomer = str(uuid.uuid4())
    with engine.begin() as conn:
        conn.execute(sa.insert(tables.allocations).values(
            resource_provider_id=root, consumer_id=ids["consumer"], resource_class_id=2,
            used=50, created_at=now))
        conn.execute(sa.update(tables.resource_providers)
                     .where(tables.resource_providers.c.id == root)
                     .values(generation=tables.resource_providers.c.generation + 1))
        rp = tables.resource_providers
        conn.execute(sa.insert(rp).values(uuid=newcomer, name="host-2", generation=0,
                                          created_at=now))
        # As upstream makes a root: its root is itself, set once it has an id.
        conn.execute(sa.update(rp).where(rp.c.uuid == newcomer)
                     .values(root_provider_id=rp.c.id))
        # A change to a row of the provider's (its tree is named by the
        # root its provider row has, looked up by the trigger).
        conn.execute(sa.update(tables.inventories)
                     .where(tables.inventories.c.resource_provider_id == root,
                            tables.inventories.c.resource_class_id == 2)
                     .values(total=2000))
    engine.dispose()
    with replica.current() as world:
        assert newcomer in world.uuid_of_id.values()
        assert world.snapshot.inventory[world.snapshot.index[ids["root"]]]["DISK_GB"][4] \
            == 2000
        fresh = Replica(db)
        with fresh.current() as rebuilt:
            assert world_view(world) == world_view(rebuilt)
    # Our own write: one feed row, its own.
    with db.read() as conn:
        head = conn.execute(sa.select(sa.func.max(tables.placement_changes.c.id))).scalar()
    with db.write() as conn:
        conn.execute(sa.update(tables.resource_providers)
                     .where(tables.resource_providers.c.id == root)
                     .values(name="host-1-renamed"))
        from allotment.storage import feed

        feed.note_roots(conn, [root])
    with db.read() as conn:
        rows = conn.execute(sa.select(tables.placement_changes.c.data).where(
            tables.placement_changes.c.id > head)).scalars().all()
    assert len(rows) == 1
    db.dispose()


def world_view(world) -> tuple:
    used = {u: {rc: n for rc, n in by_rc.items() if n}
            for u, by_rc in world.snapshot.used.items()}
    return (sorted(world.uuid_of_id.items()), {u: r for u, r in used.items() if r},
            sorted((r.uuid, r.name, r.generation) for r in world.snapshot.providers))


def _limited_url(url: str, backend: str) -> str:
    """The same database as a user that may read and write rows but not
    change the schema (as some deployments give the service)."""
    name = f"limited_{uuid.uuid4().hex[:8]}"
    parsed = sa.engine.make_url(db_mod.normalise_url(url))
    engine = plain_engine(url)
    with engine.begin() as conn:
        if backend == "postgresql":
            conn.exec_driver_sql(f"CREATE ROLE {name} LOGIN")
            conn.exec_driver_sql(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES "
                                 f"IN SCHEMA public TO {name}")
            conn.exec_driver_sql(f"REVOKE CREATE ON SCHEMA public FROM {name}, PUBLIC")
        else:
            conn.exec_driver_sql(f"CREATE USER '{name}'@'127.0.0.1'")
            conn.exec_driver_sql(f"GRANT SELECT, INSERT, UPDATE, DELETE ON "
                                 f"`{parsed.database}`.* TO '{name}'@'127.0.0.1'")
    engine.dispose()
    return parsed.set(username=name, password=None).render_as_string(hide_password=False)


@pytest.mark.parametrize("backend_name", [b for b in BACKENDS if b != "sqlite"])
def test_a_missing_privilege_is_said_and_leaves_the_data(backend_name, tmp_path):
    (tmp_path / "db").mkdir()
    url = backends.create_database(backend_name, tmp_path / "db")
    try:
        upstream_manage(url, tmp_path / "upstream", "db", "sync")
        fill(url)
        before, shape = dump(url), schema(url)
        conf = tmp_path / "placement.conf"
        conf.write_text(f"[placement_database]\nconnection = "
                        f"{_limited_url(url, backend_name)}\n")
        done = subprocess.run([str(Path(sys.executable).with_name("allotment-manage")),
                               "--config-file", str(conf), "db", "sync"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert "Placement's data is intact" in done.stderr
        assert "denied" in done.stderr.lower()
        assert (dump(url), schema(url)) == (before, shape)
        engine = plain_engine(url)
        assert migration.state(engine).own is None
        engine.dispose()
    finally:
        backends.drop_database(backend_name, url)


def test_a_missing_trigger_keeps_the_service_down_until_db_sync_puts_it_back(upstream_url):
    from allotment import errors
    from allotment.service import setup
    from tests.conftest import make_conf

    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    name, table, _ = foreign.all_triggers()[0]
    with db.engine.begin() as conn:
        on = f" ON {table}" if db.backend == "postgresql" else ""
        conn.exec_driver_sql(f"DROP TRIGGER {name}{on}")
    if db.backend == "sqlite":
        # Migrated on start (the zero-set-up default): put back there.
        setup.prepare_database(db, make_conf(upstream_url))
    else:
        with pytest.raises(errors.ServiceUnavailable, match="triggers"):
            setup.prepare_database(db, make_conf(upstream_url))
        migration.upgrade(db.engine)
    with db.engine.connect() as conn:
        assert migration.triggers_complete(conn)
    setup.prepare_database(db, make_conf(upstream_url))
    db.dispose()


def test_concurrent_writes_of_both_kinds_all_reach_the_world(upstream_url):
    """Other programs and allotment writing at once: a world kept current
    from the feed ends equal to one read afresh."""
    import threading

    from allotment.storage import feed

    ids = fill(upstream_url)
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    replica = Replica(db)
    with replica.current() as world:
        root = {u: i for i, u in world.uuid_of_id.items()}[ids["root"]]
    errors: list[BaseException] = []

    def again_on_deadlock(write) -> None:
        # As both programs do: a transaction the database aborted to break
        # a deadlock is run again (upstream's oslo.db, allotment's services).
        from allotment import errors as allotment_errors

        for _ in range(20):
            try:
                return write()
            except allotment_errors.TransactionAborted:
                continue
            except sa.exc.OperationalError as exc:
                if "1213" not in str(exc) and "deadlock" not in str(exc).lower():
                    raise
        raise AssertionError("still deadlocked after 20 tries")

    def claim_elsewhere(engine):
        with engine.begin() as conn:
            conn.execute(sa.insert(tables.allocations).values(
                resource_provider_id=root, consumer_id=ids["consumer"],
                resource_class_id=2, used=1, created_at=clock.utcnow()))

    def claim_here():
        with db.write() as conn:
            conn.execute(sa.insert(tables.allocations).values(
                resource_provider_id=root, consumer_id=ids["consumer"],
                resource_class_id=2, used=2, created_at=clock.utcnow()))
            feed.note_usage(conn, {(root, 2): 2})

    def other_program():
        engine = plain_engine(upstream_url)
        try:
            for _ in range(15):
                again_on_deadlock(lambda: claim_elsewhere(engine))
        except BaseException as exc:
            errors.append(exc)
        finally:
            engine.dispose()

    def allotment_writer():
        try:
            for _ in range(15):
                again_on_deadlock(claim_here)
                with replica.current():
                    pass
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=f) for f in
               (other_program, other_program, allotment_writer, allotment_writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    with replica.current() as world:
        assert world.snapshot.used[ids["root"]]["DISK_GB"] == 100 + 2 * 15 + 2 * 30
        fresh = Replica(db)
        with fresh.current() as rebuilt:
            assert world_view(world) == world_view(rebuilt)
    db.dispose()


def test_another_program_cannot_allocate_past_capacity(upstream_url):
    """Its claim that checked usage before a concurrent one committed is
    aborted as a deadlock (which upstream runs again), not stored."""
    ids = fill(upstream_url)  # DISK_GB on the root: 1000, of which 100 used
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    engine = plain_engine(upstream_url)
    with engine.connect() as conn:
        root = conn.execute(sa.select(tables.resource_providers.c.id).where(
            tables.resource_providers.c.uuid == ids["root"])).scalar()

    def claim(used: int) -> None:
        with engine.begin() as conn:
            conn.execute(sa.insert(tables.allocations).values(
                resource_provider_id=root, consumer_id=str(uuid.uuid4()),
                resource_class_id=2, used=used, created_at=clock.utcnow()))

    if db.backend != "sqlite":  # writers are serial there: each check saw all
        with pytest.raises(sa.exc.OperationalError, match=r"(?i)deadlock"):
            claim(901)
    claim(900)
    with engine.connect() as conn:
        used = conn.execute(sa.select(sa.func.sum(tables.allocations.c.used)).where(
            tables.allocations.c.resource_provider_id == root,
            tables.allocations.c.resource_class_id == 2)).scalar()
    assert used == 1000
    engine.dispose()
    db.dispose()



def test_a_refused_allocation_undoes_its_statement_only_on_mysql(upstream_url):
    """docs/adopting.md: upstream's retry after the guard runs in the same
    transaction.  On MySQL and MariaDB a trigger's error undoes the one
    statement: the transaction goes on, with what it wrote before."""
    if not upstream_url.startswith("mysql"):
        pytest.skip("PostgreSQL aborts the whole transaction; SQLite has no guard")
    ids = fill(upstream_url)  # DISK_GB on the root: 1000, of which 100 used
    db = open_db(upstream_url)
    migration.upgrade(db.engine)
    engine = plain_engine(upstream_url)
    held = tables.allocations.c
    with engine.connect() as conn:
        root = conn.execute(sa.select(tables.resource_providers.c.id).where(
            tables.resource_providers.c.uuid == ids["root"])).scalar()
        conn.rollback()

        def claim(used: int) -> None:
            conn.execute(sa.insert(tables.allocations).values(
                resource_provider_id=root, consumer_id=str(uuid.uuid4()),
                resource_class_id=2, used=used, created_at=clock.utcnow()))

        def used() -> int:
            return conn.execute(sa.select(sa.func.sum(held.used)).where(
                held.resource_provider_id == root, held.resource_class_id == 2)).scalar()

        with conn.begin():
            claim(400)
            with pytest.raises(sa.exc.OperationalError, match=r"(?i)deadlock"):
                claim(501)
            assert used() == 500  # the first claim is still there
        assert used() == 500  # committed: the first claim, not the refused one
    engine.dispose()
    db.dispose()
