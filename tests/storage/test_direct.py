"""Hot statements run on the driver's own cursor (storage/direct.py): the
same rows, errors and lost connections as through SQLAlchemy, on SQLite
(sqlite3), PostgreSQL (psycopg) and MySQL/MariaDB (PyMySQL)."""

from __future__ import annotations

import contextlib
import datetime
import threading
import uuid as uuidlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from allotment import errors
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.service import resource_providers as provider_service
from allotment.service import traits as trait_names
from allotment.service.consumers import ConsumerRequest
from allotment.storage import direct, faults
from allotment.storage import inventories as inventory_store
from allotment.storage import provider_traits as trait_store
from allotment.storage import resource_providers as store
from allotment.storage.clock import utcnow
from allotment.storage.tables import allocations, placement_aggregates, resource_providers

INVENTORY = {"VCPU": {"total": 8, "allocation_ratio": 16.0},
             "MEMORY_MB": {"total": 4096, "reserved": 512, "max_unit": 2048}}


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _tree(db):
    root = provider_service.create_provider(db, name=f"root-{_uuid()}", uuid=_uuid())
    child = provider_service.create_provider(db, name=f"child-{_uuid()}", uuid=_uuid(),
                                             parent_uuid=root.uuid)
    inventory_service.replace_inventories(db, child.uuid, 0, INVENTORY,
                                          reserved_may_equal_total=True)
    trait_names.ensure_trait(db, "CUSTOM_DIRECT")
    trait_service.set_traits(db, child.uuid, ["HW_CPU_X86_AVX2", "CUSTOM_DIRECT"], 1)
    return root, child


def _read_all(db, uuid: str) -> tuple:
    """Every hot read of one provider, as plain data."""
    with db.read() as conn:
        row = store.get_by_uuid(conn, uuid)
        same = store.get_by_id(conn, row.id)
        inventory = inventory_store.get_for_provider(conn, row.id)
        traits = trait_store.for_provider(conn, row.id)
        return (tuple(row), row.uuid, row.root_provider_uuid, row.parent_provider_uuid,
                dict(row._mapping), tuple(same),
                {name: (tuple(r), r.total, r.allocation_ratio, r.updated_at)
                 for name, r in inventory.items()},
                [(tuple(t), t.name) for t in traits])


def test_hot_reads_give_what_sqlalchemy_gives(db):
    _root, child = _tree(db)
    # The first read learns each statement through SQLAlchemy, the second
    # runs it directly on PostgreSQL: both must read the same.
    first = _read_all(db, child.uuid)
    again = _read_all(db, child.uuid)
    assert first == again
    assert first[6]["VCPU"][2] == 16.0
    assert isinstance(first[6]["VCPU"][2], float)
    assert [name for _t, name in first[7]] == ["CUSTOM_DIRECT", "HW_CPU_X86_AVX2"]


def test_a_learned_statement_runs_on_the_driver(db):
    _root, child = _tree(db)
    with db.read() as conn:
        store.get_by_uuid(conn, child.uuid)
        result = direct.execute(conn, store._BY_UUID, {"uuid": child.uuid})
        assert isinstance(result, direct.Rows)
        row = result.first()
        assert (row.uuid, row.id, row[0]) == (child.uuid, child.id, child.id)
        # Dates are text to sqlite3: read back as SQLAlchemy reads them.
        assert isinstance(row.created_at, datetime.datetime)
        assert row.created_at == store.get_by_id(conn, child.id).created_at
        with pytest.raises(AttributeError):
            row.no_such_column  # noqa: B018


def test_parameters_go_as_sqlalchemy_sends_them(db):
    """Positional on SQLite, by name elsewhere, each value processed as
    SQLAlchemy would (a date becomes SQLite's text): the row updated is the
    one named, with the date as given."""
    _root, child = _tree(db)
    other = provider_service.create_provider(db, name=f"other-{_uuid()}", uuid=_uuid())
    stamp = sa.update(resource_providers).where(
        resource_providers.c.id == sa.bindparam("pid"),
        resource_providers.c.name == sa.bindparam("named")).values(
        updated_at=sa.bindparam("when", type_=resource_providers.c.updated_at.type))
    when = datetime.datetime(2031, 2, 3, 4, 5, 6)
    with db.write() as conn:
        direct.execute(conn, stamp, {"pid": other.id, "named": other.name, "when": when})
        result = direct.execute(conn, stamp, {"pid": child.id, "named": child.name,
                                              "when": when})
        assert isinstance(result, direct.Rows) and result.rowcount == 1
        assert direct.execute(conn, stamp, {"pid": child.id, "named": other.name,
                                            "when": when}).rowcount == 0
    with db.read() as conn:
        assert store.get_by_id(conn, child.id).updated_at == when


def test_statements_it_cannot_run_as_sqlalchemy_would_stay_there(db):
    _root, child = _tree(db)
    expanding = store._BY_UUIDS
    with db.read() as conn:
        for _ in range(2):
            result = direct.execute(conn, expanding, {"uuids": [child.uuid]})
            assert isinstance(result, sa.CursorResult)
            assert [r.uuid for r in result] == [child.uuid]


def test_an_insert_returns_no_rows_to_its_caller(db):
    # SQLAlchemy adds RETURNING id to a one-row INSERT on PostgreSQL, for
    # itself; the caller reads no rows either way.
    insert = sa.insert(placement_aggregates)
    with db.write() as conn:
        results = [direct.execute(conn, insert, {"uuid": _uuid(), "created_at": utcnow()})
                   for _ in range(3)]
        assert [r.rowcount for r in results[1:]] == [1, 1]
        assert isinstance(results[-1], direct.Rows) and list(results[-1]) == []
        count = conn.execute(sa.select(sa.func.count()).select_from(placement_aggregates))
        assert count.scalar() == 3


def test_a_listener_on_statements_sees_every_one(db):
    _root, child = _tree(db)
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    with db.read() as conn:
        store.get_by_uuid(conn, child.uuid)
    event.listen(db.engine, "before_cursor_execute", record)
    try:
        with db.read() as conn:
            assert store.get_by_uuid(conn, child.uuid).uuid == child.uuid
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    assert any("resource_providers.uuid =" in s for s in seen)


def test_a_driver_error_is_sqlalchemys_and_the_transaction_rolls_back(db):
    root, _child = _tree(db)
    clash = sa.update(resource_providers).where(
        resource_providers.c.id == sa.bindparam("pid")).values(name=sa.bindparam("name"))
    other = provider_service.create_provider(db, name=f"other-{_uuid()}", uuid=_uuid())
    with db.write() as conn:  # learnt
        direct.execute(conn, clash, {"pid": other.id, "name": other.name})
    with pytest.raises(sa.exc.IntegrityError), db.write() as conn:
        direct.execute(conn, clash, {"pid": other.id, "name": f"renamed-{_uuid()}"})
        direct.execute(conn, clash, {"pid": other.id, "name": root.name})
    with db.read() as conn:
        assert store.get_by_id(conn, other.id).name == other.name


# The server's id of a connection, and the statement that ends it from another.
_SESSION = {"postgresql": ("SELECT pg_backend_pid()", "SELECT pg_terminate_backend(:p)"),
            "mysql": ("SELECT CONNECTION_ID()", "KILL CONNECTION :p")}


def test_a_connection_lost_under_a_direct_statement_is_a_503_and_replaced(db):
    if db.backend not in _SESSION:
        pytest.skip("SQLite has no connection to lose")
    own_id, kill = _SESSION[db.backend]
    _root, child = _tree(db)
    with db.read() as conn:
        store.get_by_uuid(conn, child.uuid)
    with pytest.raises(errors.DatabaseUnavailable), db.read() as conn:
        store.get_by_uuid(conn, child.uuid)  # the kept cursor exists now
        session = conn.exec_driver_sql(own_id).scalar()
        with db.engine.connect() as killer:
            killer.execute(sa.text(kill), {"p": session})
        try:
            store.get_by_uuid(conn, child.uuid)
        except sa.exc.DBAPIError as exc:
            assert exc.connection_invalidated
            assert faults.translate(exc) is not None
            raise
    # The pool hands out a working connection with a new kept cursor.
    with db.read() as conn:
        assert store.get_by_uuid(conn, child.uuid).uuid == child.uuid


def test_a_column_named_like_a_row_attribute_stays_with_sqlalchemy(db):
    _root, child = _tree(db)
    counted = sa.select(sa.func.count().label("count")).where(
        resource_providers.c.uuid == sa.bindparam("uuid"))
    with db.read() as conn:
        for _ in range(2):
            result = direct.execute(conn, counted, {"uuid": child.uuid})
            assert isinstance(result, sa.CursorResult)
            assert result.scalar() == 1


@contextlib.contextmanager
def _through_sqlalchemy(db) -> Iterator[list[str]]:
    """The first word of every statement executed through SQLAlchemy while
    the block runs (a listener on executions, not on cursors, leaves the
    direct path open)."""
    seen: list[str] = []

    def counted(conn, clauseelement, multiparams, params, execution_options):
        seen.append(str(clauseelement).split(None, 1)[0])

    event.listen(db.engine, "before_execute", counted)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_execute", counted)


def _claim(db, consumer: str, amounts: dict, *, generation: int | None = None) -> None:
    from allotment.service import allocations as allocation_service
    from allotment.service.consumers import ConsumerRequest

    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(consumer, "project", "user", generation=generation,
                        check_generation=True), amounts), attempts=1)


def _move(db, instance: str, migration: str, source, dest, generations) -> None:
    """As nova moves an instance: the migration takes over the source's
    allocations (or lets them go), the instance holds the destination's."""
    from allotment.service import allocations as allocation_service
    from allotment.service.consumers import ConsumerRequest

    allocation_service.replace_many(db, [
        allocation_service.ConsumerAllocations(
            ConsumerRequest(instance, "project", "user", generation=generations[0],
                            check_generation=True),
            {dest.uuid: {"VCPU": 1, "MEMORY_MB": 256}}),
        allocation_service.ConsumerAllocations(
            ConsumerRequest(migration, "project", "user", generation=generations[1],
                            check_generation=True),
            {source.uuid: {"VCPU": 1, "MEMORY_MB": 256}} if source is not None else {}),
    ], attempts=1)


def test_claims_deletions_and_moves_run_on_the_driver_once_learned(db, monkeypatch):
    from allotment.service import allocations as allocation_service
    from allotment.storage import feed

    # The feed's housekeeping (every PRUNE_EVERY-th row id) is not a claim's
    # statement: where the session's ids stand must not decide the test.
    monkeypatch.setattr(feed, "PRUNE_EVERY", 1 << 62)

    _root, child = _tree(db)
    _root2, other = _tree(db)
    amounts = {child.uuid: {"VCPU": 1, "MEMORY_MB": 256}}

    def round_of_writes() -> None:
        instance, migration = _uuid(), _uuid()
        _claim(db, instance, amounts)                     # a new consumer
        _claim(db, instance, amounts, generation=1)       # rewritten as it is
        _move(db, instance, migration, child, other, (2, None))
        _move(db, instance, migration, None, other, (3, 1))   # confirmed
        allocation_service.delete_for_consumer(db, instance)
        held = _uuid()
        _claim(db, held, {child.uuid: {"VCPU": 1}, other.uuid: {"MEMORY_MB": 128}})
        allocation_service.delete_for_consumer(db, held)

    round_of_writes()  # the owner's rows are made, every statement learned
    round_of_writes()
    with _through_sqlalchemy(db) as seen:
        round_of_writes()
    assert seen == [], seen
    with db.read() as conn:
        usage = conn.execute(sa.select(sa.func.count()).select_from(allocations)).scalar()
    assert usage == 0


def test_a_claim_on_the_driver_keeps_its_checks(db):
    """Capacity, inventory constraints, consumer generations and a missing
    provider are answered as through SQLAlchemy once the claim's statements
    run on the driver, and a refused claim writes nothing."""
    from allotment.service import allocations as allocation_service

    _root, child = _tree(db)
    consumer = _uuid()
    for _ in range(2):  # statements of one class and of two learned
        for amounts in ({"VCPU": 1}, {"VCPU": 1, "MEMORY_MB": 256}):
            gone = _uuid()
            _claim(db, gone, {child.uuid: amounts})
            # And a consumer's allocations replaced (its generation moves on).
            _claim(db, gone, {child.uuid: {"VCPU": 1}}, generation=1)
            allocation_service.delete_for_consumer(db, gone)
    _claim(db, consumer, {child.uuid: {"VCPU": 100, "MEMORY_MB": 256}})
    with _through_sqlalchemy(db) as seen:
        with pytest.raises(errors.Conflict, match="would exceed the capacity"):
            _claim(db, _uuid(), {child.uuid: {"VCPU": 100}})
        with pytest.raises(errors.Conflict, match="inventory constraints"):
            _claim(db, _uuid(), {child.uuid: {"MEMORY_MB": 4096}})
        with pytest.raises(errors.ConcurrentUpdate, match="expected 1 but got 0"):
            _claim(db, consumer, {child.uuid: {"VCPU": 1}}, generation=0)
        with pytest.raises(errors.ConcurrentUpdate, match="expected null but got 3"):
            _claim(db, _uuid(), {child.uuid: {"VCPU": 1}}, generation=3)
        _claim(db, consumer, {child.uuid: {"VCPU": 28}}, generation=1)
    assert seen == [], seen
    with pytest.raises(errors.BadRequest, match="that does not exist"):
        _claim(db, _uuid(), {_uuid(): {"VCPU": 1}})
    with db.read() as conn:
        rows = conn.execute(sa.select(allocations.c.consumer_id, allocations.c.used)).all()
    assert sorted(rows) == [(consumer, 28)]


def test_a_claim_on_more_providers_than_are_bound_one_by_one(db):
    """Past ``direct.LISTED_UP_TO`` providers, consumers or rows, lists
    expand through SQLAlchemy: the same claim, move and deletion."""
    from allotment.service import allocations as allocation_service

    count = direct.LISTED_UP_TO + 1
    providers = []
    for _ in range(count):
        _root, child = _tree(db)
        providers.append(child)
    with db.read() as conn:
        before = [store.get_by_id(conn, rp.id).generation for rp in providers]
    consumers = [_uuid() for _ in range(count)]
    for consumer in consumers:
        _claim(db, consumer, {rp.uuid: {"VCPU": 1} for rp in providers})
    allocation_service.replace_many(db, [
        allocation_service.ConsumerAllocations(
            ConsumerRequest(consumer, "project", "user", generation=1,
                            check_generation=True), {})
        for consumer in consumers[1:]], attempts=1)
    allocation_service.delete_for_consumer(db, consumers[0])
    with db.read() as conn:
        left = conn.execute(sa.select(sa.func.count()).select_from(allocations)).scalar()
        generations = [store.get_by_id(conn, rp.id).generation for rp in providers]
    assert left == 0
    # A claim per consumer, and the move that emptied them.
    assert generations == [generation + count + 1 for generation in before]


def test_a_deadlock_under_direct_statements_is_an_aborted_transaction(db):
    """Two writers locking two providers in opposite orders on the driver:
    the server aborts one, which is told as a transaction to run again
    (storage/retry.py), as it is through SQLAlchemy; the other commits."""
    if db.backend == "sqlite":
        pytest.skip("SQLite's writers are serial")
    _root, first = _tree(db)
    _root, second = _tree(db)
    with db.write() as conn:  # learnt
        store.lock_by_uuid(conn, first.uuid)
    both_hold_one = threading.Barrier(2)
    outcomes: list[object] = []

    def writer(one: str, other: str) -> None:
        try:
            with db.write() as conn:
                store.lock_by_uuid(conn, one)
                both_hold_one.wait(timeout=30)
                store.lock_by_uuid(conn, other)
            outcomes.append("committed")
        except Exception as exc:
            outcomes.append(exc)

    with _through_sqlalchemy(db) as seen:
        threads = [threading.Thread(target=writer, args=pair)
                   for pair in ((first.uuid, second.uuid), (second.uuid, first.uuid))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert seen == [], seen
    assert outcomes.count("committed") == 1, outcomes
    aborted = next(o for o in outcomes if o != "committed")
    assert isinstance(aborted, errors.TransactionAborted), aborted
    assert isinstance(aborted.__cause__, sa.exc.DBAPIError)
    assert faults.is_transient(aborted.__cause__)
