"""How many statements the hot writes send, and that the short forms still
behave as the long ones did.

On a database server every statement is a round trip, and loading a cloud
through the API is bound by them; these tests pin the counts where a
shorter form exists, so a change that adds round trips back is noticed.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from allotment import errors
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.service import resource_classes as class_service
from allotment.service import resource_providers as provider_service
from allotment.storage import db as db_mod
from allotment.storage import direct, feed, names
from allotment.storage import inventories as inventory_store
from allotment.storage import resource_providers as store
from tests.harness.statements import mysql_commands, recording


@pytest.fixture
def sent(db) -> Iterator[list[str]]:
    """Every statement sent while the test runs, as sent."""
    with recording(db.engine) as sent:
        yield sent


@pytest.fixture
def sent_direct(db, monkeypatch) -> Iterator[tuple[list[str], list[str]]]:
    """Every statement sent while the test runs, without closing the direct
    path (a listener on cursor executions would): (statements sent on the
    driver's kept cursor, statements executed through SQLAlchemy)."""
    on_driver: list[str] = []
    through_sqlalchemy: list[str] = []
    kept = direct._cursor

    class Recording:
        def __init__(self, cursor) -> None:
            self._cursor = cursor

        def execute(self, sql, *args):
            on_driver.append(" ".join(sql.split()))
            return self._cursor.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._cursor, name)

    def record(conn, clauseelement, multiparams, params, execution_options):
        through_sqlalchemy.append(" ".join(str(clauseelement).split()))

    monkeypatch.setattr(direct, "_cursor", lambda conn: Recording(kept(conn)))
    # The feed's housekeeping (every PRUNE_EVERY-th row id) is no request's
    # statement: where the session's ids stand must not decide a count.
    monkeypatch.setattr(feed, "PRUNE_EVERY", 1 << 62)
    event.listen(db.engine, "before_execute", record)
    try:
        yield on_driver, through_sqlalchemy
    finally:
        event.remove(db.engine, "before_execute", record)


def _first_words(sent: list[str]) -> list[str]:
    """The first word of every statement sent."""
    return [text.split(None, 1)[0].upper() for text in sent]


def _lookups(sent: list[str], table: str) -> list[str]:
    """Statements that read names from ``table`` (not joins through it)."""
    return [t for t in sent if t.upper().startswith("SELECT") and f"FROM {table} " in t + " "
            and " JOIN " not in t.upper()]


def _uuid() -> str:
    return str(uuidlib.uuid4())


def test_a_new_root_provider_is_one_insert_on_postgresql(db, sent):
    row = provider_service.create_provider(db, name="one-insert", uuid=_uuid())
    assert row.root_provider_id == row.id and row.parent_provider_id is None
    statements = _first_words(sent)
    if db.backend == "postgresql":
        # The provider's row (its own root already) and the change feed's.
        assert statements.count("SAVEPOINT") == 0
        assert [s for s in statements if s != "SELECT"] == ["WITH", "INSERT"]


def test_a_new_child_names_its_root_on_every_backend(db):
    root = provider_service.create_provider(db, name="root", uuid=_uuid())
    child = provider_service.create_provider(db, name="child", uuid=_uuid(),
                                             parent_uuid=root.uuid)
    grandchild = provider_service.create_provider(db, name="grandchild", uuid=_uuid(),
                                                  parent_uuid=child.uuid)
    assert (child.root_provider_id, child.parent_provider_id) == (root.id, root.id)
    assert (grandchild.root_provider_id, grandchild.parent_provider_id) == (root.id, child.id)
    with db.read() as conn:

        stored = store.get_by_uuid(conn, grandchild.uuid)
        assert (stored.root_provider_id, stored.root_provider_uuid) == (root.id, root.uuid)
        assert store.get_by_uuid(conn, root.uuid).root_provider_id == root.id


def test_a_new_child_locks_and_reads_its_parent_in_one_statement(db, sent):
    root = provider_service.create_provider(db, name="parent", uuid=_uuid())
    sent.clear()
    child = provider_service.create_provider(db, name="child", uuid=_uuid(),
                                             parent_uuid=root.uuid)
    assert (child.parent_provider_uuid, child.root_provider_uuid) == (root.uuid, root.uuid)
    if db.backend == "postgresql":
        # The tree lock, the parent locked and read, the provider, the feed.
        assert _first_words(sent) == ["SELECT", "SELECT", "WITH", "INSERT"]
        assert "FOR UPDATE OF resource_providers" in sent[1]
    with pytest.raises(errors.BadRequest, match="parent provider UUID does not exist"):
        provider_service.create_provider(db, name="orphan", uuid=_uuid(),
                                         parent_uuid=_uuid())


@pytest.mark.parametrize("taken", ["uuid", "name", "both"])
def test_a_taken_uuid_or_name_is_reported_and_nothing_is_written(db, taken):
    first = provider_service.create_provider(db, name="taken", uuid=_uuid())
    uuid = first.uuid if taken in ("uuid", "both") else _uuid()
    name = first.name if taken in ("name", "both") else "free"
    with pytest.raises(errors.Conflict) as caught:
        provider_service.create_provider(db, name=name, uuid=uuid)
    parts = {"uuid": f"uuid: {uuid}", "name": f"name: {name}",
             "both": f"uuid: {uuid}, name: {name}"}
    assert str(caught.value.detail) == (
        f"Conflicting resource provider {parts[taken]} already exists.")
    # The transaction that found the conflict wrote nothing, and the next
    # write goes through.
    with db.read() as conn:

        assert store.get_by_uuid(conn, first.uuid).id == first.id
        if uuid != first.uuid:
            assert store.get_by_uuid(conn, uuid) is None
        assert not store.name_taken(conn, "free")
    assert provider_service.create_provider(db, name="free", uuid=_uuid()).name == "free"


def test_standard_classes_and_traits_are_looked_up_once(db, sent):
    names._KEPT.pop(db.engine, None)  # as a new process starts
    inventories = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}}
    for i in range(2):
        rp = provider_service.create_provider(db, name=f"host{i}", uuid=_uuid())
        sent.clear()
        inventory_service.replace_inventories(db, rp.uuid, 0, inventories,
                                              reserved_may_equal_total=True)
        assert bool(_lookups(sent, "resource_classes")) == (i == 0), sent
        sent.clear()
        _, rows = trait_service.set_traits(db, rp.uuid, ["HW_CPU_X86_AVX2", "COMPUTE_NODE"],
                                                  1)
        assert [r.name for r in rows] == ["COMPUTE_NODE", "HW_CPU_X86_AVX2"]
        assert bool(_lookups(sent, "traits")) == (i == 0), sent
    with db.read() as conn:
        stored = inventory_store.get_for_provider(conn, rp.id)
        assert sorted(stored) == ["MEMORY_MB", "VCPU"]


def test_custom_names_are_looked_up_every_time(db, sent):
    """A custom class can be deleted and made again under a new id: its id
    is never taken from an earlier request."""
    rp = provider_service.create_provider(db, name="custom", uuid=_uuid())
    first = class_service.create_class(db, "CUSTOM_MAGIC")
    generation = inventory_service.replace_inventories(
        db, rp.uuid, 0, {"CUSTOM_MAGIC": {"total": 1}}, reserved_may_equal_total=True
    )[0].generation
    generation = inventory_service.replace_inventories(
        db, rp.uuid, generation, {}, reserved_may_equal_total=True)[0].generation
    class_service.delete_class(db, "CUSTOM_MAGIC")
    class_service.create_class(db, "CUSTOM_OTHER")  # takes over the old id on SQLite
    again = class_service.create_class(db, "CUSTOM_MAGIC")
    assert again.id != first.id
    sent.clear()
    inventory_service.replace_inventories(db, rp.uuid, generation,
                                          {"CUSTOM_MAGIC": {"total": 2}},
                                          reserved_may_equal_total=True)
    assert _lookups(sent, "resource_classes")
    with db.read() as conn:
        stored = inventory_store.get_for_provider(conn, rp.id)
        assert stored["CUSTOM_MAGIC"].resource_class_id == again.id
        assert stored["CUSTOM_MAGIC"].total == 2


def test_postgresql_checks_a_pooled_connection_without_a_round_trip(db, monkeypatch):
    """No ping before each use: an idle connection the server ended has
    something to read (the server's goodbye, then end of file), and is
    replaced before a request uses it."""
    if db.backend != "postgresql":
        pytest.skip("PostgreSQL's pooled connections are checked by their socket")
    pings = []
    monkeypatch.setattr(db.engine.dialect, "do_ping",
                        lambda conn: pings.append(conn) or True)
    with db.read() as conn:
        pooled = conn.connection.dbapi_connection
    pid = pooled.info.backend_pid
    assert db_mod.idle_connection_alive(pooled)
    killer = sa.create_engine(db.engine.url, poolclass=sa.pool.NullPool)
    with killer.connect() as other:
        assert other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)}, 5000)").scalar()
    killer.dispose()
    assert not db_mod.idle_connection_alive(pooled)
    # The dead connection is found at checkout and the pool starts afresh:
    # the request is served, without an error and without a ping.
    rp = provider_service.create_provider(db, name="after-the-cut", uuid=_uuid())
    with db.read() as conn:
        assert store.get_by_uuid(conn, rp.uuid).id == rp.id
        assert conn.connection.dbapi_connection.info.backend_pid != pid
    assert pings == []



def test_mysql_checks_a_pooled_connection_without_a_round_trip(db):
    """As on PostgreSQL: no ping before each use; a connection the server
    ended (KILL, a restart, wait_timeout) has end of file to read and is
    replaced before a request uses it."""
    if db.backend != "mysql":
        pytest.skip("MySQL's pooled connections are checked by their socket")
    for engine in db.engines:
        assert not engine.pool._pre_ping
    with db.read() as conn:
        pooled = conn.connection.dbapi_connection
    thread = pooled.thread_id()
    assert db_mod.idle_connection_alive(pooled)
    killer = sa.create_engine(db.engine.url, poolclass=sa.pool.NullPool)
    with killer.connect() as other:
        other.exec_driver_sql(f"KILL CONNECTION {int(thread)}")
    killer.dispose()
    deadline = time.monotonic() + 10
    while db_mod.idle_connection_alive(pooled) and time.monotonic() < deadline:
        time.sleep(0.01)  # the server closes it as soon as it gets to it
    assert not db_mod.idle_connection_alive(pooled)
    with mysql_commands() as commands:
        rp = provider_service.create_provider(db, name="after-the-kill", uuid=_uuid())
        with db.read() as conn:
            assert store.get_by_uuid(conn, rp.uuid).id == rp.id
            assert conn.connection.dbapi_connection.thread_id() != thread
    assert "PING" not in commands


def test_a_read_on_mysql_keeps_its_snapshot_in_two_round_trips_of_its_own(db):
    """REPEATABLE READ for the read's transaction only: one statement asks
    for it, and the COMMIT ends it (the pool has nothing left to roll
    back); a row another connection commits meanwhile is not seen."""
    if db.backend != "mysql":
        pytest.skip("MySQL's reads set their isolation level by a statement")
    rp = provider_service.create_provider(db, name="snapshot", uuid=_uuid())
    with db.read() as conn:  # a pooled connection made
        store.get_by_uuid(conn, rp.uuid)
    other = sa.create_engine(db.engine.url, poolclass=sa.pool.NullPool)
    try:
        with other.connect() as writer, mysql_commands() as commands, db.read() as conn:
            before = store.get_by_uuid(conn, rp.uuid).generation
            writer.exec_driver_sql(
                "UPDATE resource_providers SET generation = generation + 1 "
                f"WHERE uuid = '{rp.uuid}'")
            writer.commit()
            assert store.get_by_uuid(conn, rp.uuid).generation == before
    finally:
        other.dispose()
    # From the read's first command (the pool may have made a connection
    # for it first, with its own session settings).
    asked = commands.index("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    assert _first_words(commands[asked:]) == [
        "SET", "SELECT", "UPDATE", "COMMIT", "SELECT", "COMMIT"], commands
    with db.read() as conn:
        assert store.get_by_uuid(conn, rp.uuid).generation == before + 1


def _tree_of_three(db) -> list:
    """A host, a NUMA node under it and a device under that, with inventory."""
    rows, parent = [], None
    for name, rc in (("host", "DISK_GB"), ("numa", "VCPU"), ("dev", "VGPU")):
        rp = provider_service.create_provider(db, name=f"{name}-{_uuid()}", uuid=_uuid(),
                                              parent_uuid=parent)
        rp, _ = inventory_service.replace_inventories(
            db, rp.uuid, rp.generation, {rc: {"total": 8}}, reserved_may_equal_total=False)
        rows.append(rp)
        parent = rp.uuid
    return rows


def _claim(db, consumer: str, tree: list) -> None:
    from allotment.service import allocations as allocation_service
    from allotment.service.consumers import ConsumerRequest

    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(consumer, "project", "user"),
        {tree[0].uuid: {"DISK_GB": 1}, tree[1].uuid: {"VCPU": 2},
         tree[2].uuid: {"VGPU": 1}}), attempts=1)


def test_a_claim_moves_every_provider_it_holds_on_in_one_update(db, sent):
    tree = _tree_of_three(db)
    _claim(db, _uuid(), tree)  # the owner's rows are made
    sent.clear()
    _claim(db, _uuid(), tree)
    # On PostgreSQL the UPDATE follows the inserts' WITH (storage/new_claims.py).
    updates = [t for t in sent if "UPDATE RESOURCE_PROVIDERS" in " ".join(t.upper().split())]
    assert len(updates) == 1, updates
    with db.read() as conn:
        assert [store.get_by_uuid(conn, rp.uuid).generation for rp in tree] == [
            rp.generation + 2 for rp in tree]  # two claims


def test_a_claim_that_lost_a_race_for_one_provider_moves_none(db):
    from allotment.service import allocations as allocation_service

    tree = _tree_of_three(db)
    with pytest.raises(allocation_service.RetryWrite), db.write() as conn:
        from allotment.storage import allocations as allocation_store

        seen = {rp.id: rp.generation for rp in tree}
        seen[tree[1].id] = tree[1].generation + 7  # moved on meanwhile
        if not allocation_store.advance_providers(conn, seen):
            raise allocation_service.RetryWrite()
    with db.read() as conn:
        assert [store.get_by_uuid(conn, rp.uuid).generation for rp in tree] == [
            rp.generation for rp in tree]


def test_deleting_a_consumer_does_not_read_it_first(db, sent):
    from allotment.service import allocations as allocation_service

    tree = _tree_of_three(db)
    consumer = _uuid()
    _claim(db, consumer, tree)
    sent.clear()
    allocation_service.delete_for_consumer(db, consumer)
    assert not [t for t in sent if t.upper().startswith("SELECT") and " consumers" in t], sent
    with pytest.raises(errors.NotFound):
        allocation_service.delete_for_consumer(db, consumer)
    with pytest.raises(errors.NotFound):
        allocation_service.delete_for_consumer(db, "no\x00such")


# What a claim of a new consumer on three providers sends once its
# statements are learned, backend by backend, all on the driver: the
# consumer read with its owner's ids, the providers locked and read, the
# limits and usage read, the consumer inserted, the allocations inserted,
# the providers moved on (on PostgreSQL these three are one statement,
# storage/new_claims.py), the feed's row (MySQL: its tail locked, then the
# row); SQLite adds its BEGIN IMMEDIATE and writer row.
_CLAIM = {
    "sqlite": ["BEGIN", "INSERT", "SELECT", "SELECT", "SELECT", "INSERT", "INSERT",
               "UPDATE", "INSERT", "DELETE"],
    "postgresql": ["SELECT", "SELECT", "SELECT", "WITH", "INSERT"],
    "mysql": ["SELECT", "SELECT", "SELECT", "INSERT", "INSERT", "UPDATE", "SELECT", "INSERT"],
}
# And deleting it: the allocations deleted (returning what they held), the
# consumer deleted, the feed's row.
_DELETE = {
    "sqlite": ["BEGIN", "INSERT", "DELETE", "DELETE", "INSERT", "DELETE"],
    "postgresql": ["DELETE", "DELETE", "INSERT"],
    "mysql": ["DELETE", "DELETE", "SELECT", "INSERT"],
}


def test_a_claim_and_its_deletion_on_the_driver_count_their_round_trips(db, sent_direct):
    from allotment.service import allocations as allocation_service

    on_driver, through_sqlalchemy = sent_direct
    tree = _tree_of_three(db)
    for _ in range(2):  # every statement learned
        consumer = _uuid()
        _claim(db, consumer, tree)
        allocation_service.delete_for_consumer(db, consumer)
    on_driver.clear()
    through_sqlalchemy.clear()
    _claim(db, consumer := _uuid(), tree)
    claim = list(on_driver)
    on_driver.clear()
    allocation_service.delete_for_consumer(db, consumer)
    assert through_sqlalchemy == []
    assert _first_words(claim) == _CLAIM[db.backend], claim
    assert _first_words(on_driver) == _DELETE[db.backend], on_driver
    updates = [t for t in claim if "UPDATE RESOURCE_PROVIDERS" in " ".join(t.upper().split())]
    assert len(updates) == 1, updates
    assert not [t for t in on_driver if t.upper().startswith("SELECT")
                and " consumers" in t], on_driver
    with db.read() as conn:
        assert [store.get_by_uuid(conn, rp.uuid).generation for rp in tree] == [
            rp.generation + 3 for rp in tree]  # three claims


def test_a_consumer_is_read_with_its_owners_ids_in_one_statement(db, sent_direct):
    """A claim reads its consumer and the ids of the owner it names in one
    statement: what a write checks and changes of the consumer (its ids,
    generation and owner's ids, as get_many_by_uuid gives them), and each
    id as ensure_owner finds it (None where not recorded yet)."""
    from allotment.storage import consumers as consumer_store

    on_driver, through_sqlalchemy = sent_direct
    tree = _tree_of_three(db)
    _claim(db, consumer := _uuid(), tree)
    with db.write() as conn:
        project, user, _ = consumer_store.ensure_owner(conn, "project", "user", None)
        typed = consumer_store.ensure_consumer_type(conn, "INSTANCE")
        on_driver.clear()
        through_sqlalchemy.clear()  # learned by the claim
        row, owner = consumer_store.get_with_owner(conn, consumer, "project", "other", None)
        assert _first_words(on_driver) == ["SELECT"] and through_sqlalchemy == [], (
            on_driver, through_sqlalchemy)
        expected = consumer_store.get_many_by_uuid(conn, [consumer])[consumer]
        fields = ("id", "uuid", "generation", "project_id", "user_id", "consumer_type_id")
        assert tuple(row)[-len(fields):] == tuple(getattr(expected, f) for f in fields)
        assert (row.uuid, row.generation, row.project_id) == (consumer, 1, project)
        assert owner == (project, None, None)
        assert consumer_store.get_with_owner(conn, _uuid(), "project", "user", "INSTANCE") == (
            None, (project, user, typed))
        assert consumer_store.get_with_owner(conn, "no\x00such", "nobody", "user", None) == (
            None, (None, user, None))


def test_a_claim_on_the_driver_that_lost_a_race_for_one_provider_moves_none(db, sent_direct):
    from allotment.service import allocations as allocation_service
    from allotment.storage import allocations as allocation_store

    on_driver, through_sqlalchemy = sent_direct
    tree = _tree_of_three(db)
    with db.write() as conn:  # the UPDATE of three providers learned
        assert allocation_store.advance_providers(conn, {rp.id: rp.generation for rp in tree})
    with db.read() as conn:
        tree = [store.get_by_uuid(conn, rp.uuid) for rp in tree]
    through_sqlalchemy.clear()
    with pytest.raises(allocation_service.RetryWrite), db.write() as conn:
        seen = {rp.id: rp.generation for rp in tree}
        seen[tree[1].id] = tree[1].generation + 7  # moved on meanwhile
        if not allocation_store.advance_providers(conn, seen):
            raise allocation_service.RetryWrite()
    assert not [t for t in through_sqlalchemy if t.upper().startswith("UPDATE")]
    assert [t for t in on_driver if t.upper().startswith("UPDATE RESOURCE_PROVIDERS")]
    with db.read() as conn:
        assert [store.get_by_uuid(conn, rp.uuid).generation for rp in tree] == [
            rp.generation for rp in tree]


def test_a_consumers_allocations_are_one_statement_on_the_driver(db, sent_direct):
    """nova's scheduler reads a consumer's allocations before every claim:
    once learned, one statement on the driver, outside a transaction (no
    BEGIN of ours), and the rows read as they were through SQLAlchemy."""
    from allotment.service import allocations as allocation_service

    on_driver, through_sqlalchemy = sent_direct
    through_any_engine: list[str] = []

    def record(conn, clauseelement, multiparams, params, execution_options):
        through_any_engine.append(str(clauseelement))

    tree = _tree_of_three(db)
    _claim(db, consumer := _uuid(), tree)
    learned = allocation_service.get_for_consumer(db, consumer)
    for engine in db.engines:
        event.listen(engine, "before_execute", record)
    try:
        on_driver.clear()
        through_sqlalchemy.clear()
        rows = allocation_service.get_for_consumer(db, consumer)
        assert allocation_service.get_for_consumer(db, _uuid()) == []
    finally:
        for engine in db.engines:
            event.remove(engine, "before_execute", record)
    assert through_sqlalchemy == [] and through_any_engine == []
    assert _first_words(on_driver) == ["SELECT", "SELECT"], on_driver
    assert [tuple(r) for r in rows] == [tuple(r) for r in learned]
    assert sorted((r.provider_uuid, r.resource_class, r.used) for r in rows) == sorted([
        (tree[0].uuid, "DISK_GB", 1), (tree[1].uuid, "VCPU", 2), (tree[2].uuid, "VGPU", 1)])
    assert {(r.project_external_id, r.user_external_id, r.consumer_generation)
            for r in rows} == {("project", "user", 1)}
    assert all(r.created_at is not None for r in rows)


def test_a_claims_statements_are_planned_once_per_connection_on_postgresql(db):
    """PostgreSQL plans a prepared statement again at every execution when
    the plan made for the values looks cheaper than the one kept for the
    statement: a lock with array parameters (the kept plan cannot know
    their lengths), limits filtered on classes too (the values' plan knows
    how many rows they have).  That was about 300 and 175 us of the
    server's CPU on every claim.  Once the tables have statistics, a claim's
    lock and its limits settle on one plan per connection after the first
    few executions.  Shown on a thousand providers with inventory and
    allocations, all rolled back."""
    from allotment.storage import allocations as allocation_store

    if db.backend != "postgresql":
        pytest.skip("PostgreSQL's plan cache")

    class Done(Exception):
        pass

    plans = []
    with pytest.raises(Done), db.write() as conn:
        conn.execute(sa.text(
            "INSERT INTO resource_providers (created_at, uuid, name, generation)"
            " SELECT now(), md5(n::text), 'plan-' || n, 0"
            " FROM generate_series(1, 1000) AS n"))
        conn.execute(sa.text("UPDATE resource_providers SET root_provider_id = id"
                             " WHERE name LIKE 'plan-%'"))
        conn.execute(sa.text(
            "INSERT INTO inventories (created_at, resource_provider_id, resource_class_id,"
            " total, reserved, min_unit, max_unit, step_size, allocation_ratio)"
            " SELECT now(), rp.id, rc.id, 64, 0, 1, 64, 1, 1.0"
            " FROM resource_providers AS rp, resource_classes AS rc"
            " WHERE rp.name LIKE 'plan-%' AND rc.name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')"))
        conn.execute(sa.text(
            "INSERT INTO allocations (created_at, resource_provider_id, consumer_id,"
            " resource_class_id, used)"
            " SELECT now(), inv.resource_provider_id, md5(inv.id || '-' || n),"
            " inv.resource_class_id, 1"
            " FROM inventories AS inv, generate_series(1, 10) AS n"
            " WHERE inv.resource_provider_id IN"
            " (SELECT id FROM resource_providers WHERE name LIKE 'plan-%')"))
        for table in ("resource_providers", "inventories", "allocations"):
            conn.execute(sa.text(f"ANALYZE {table}"))
        providers = conn.execute(sa.text(
            "SELECT uuid, id FROM resource_providers WHERE name LIKE 'plan-%'"
            " ORDER BY id LIMIT 3")).all()
        classes = [row[0] for row in conn.execute(sa.text(
            "SELECT id FROM resource_classes WHERE name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')"))]
        # The pooled connection may hold statements other tests prepared on
        # it (an older lock among them): only what this test runs counts.
        # (They last through rollbacks, storage/pg_rollback.py: only the
        # plans made here count.)
        before = {name: (generic, custom) for name, generic, custom in conn.execute(sa.text(
            "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements"))}
        for _ in range(12):
            for count in (1, 3):
                wanted = providers[:count]
                assert len(store.lock_many(conn, uuids=[u for u, _ in wanted])) == count
                limits = allocation_store.limits_and_usage(
                    conn, [pid for _, pid in wanted], classes)
                assert sorted(limits) == sorted(
                    (pid, cid) for _, pid in wanted for cid in classes)
        for name, statement, generic, custom in conn.execute(
                sa.text("SELECT name, statement, generic_plans, custom_plans"
                        " FROM pg_prepared_statements"
                        " WHERE statement LIKE :lock OR statement LIKE :limits"),
                {"lock": "%FOR UPDATE OF resource_providers%", "limits": "%FROM inventories%"}):
            generic_before, custom_before = before.get(name, (0, 0))
            if generic + custom > generic_before + custom_before:
                plans.append((statement, generic - generic_before, custom - custom_before))
        raise Done
    assert len(plans) == 4, plans
    for statement, generic, custom in plans:
        assert generic > 0 and custom <= 5, (statement, generic, custom)
