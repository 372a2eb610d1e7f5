"""Statements sent together (storage/direct.py ``together``): on PostgreSQL
in one round trip through psycopg's pipeline mode, elsewhere one by one;
the same rows and the same errors either way.  And what a process reads to
catch up with a change of topology (storage/catch_up.py)."""

from __future__ import annotations

import datetime
import uuid as uuidlib

import psycopg
import pytest
import sqlalchemy as sa

from allotment import errors
from allotment.service import aggregates as aggregate_service
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.service import resource_providers as provider_service
from allotment.storage import catch_up, direct, faults, feed
from allotment.storage import loader as store

INVENTORY = {"VCPU": {"total": 8, "allocation_ratio": 16.0},
             "MEMORY_MB": {"total": 4096, "reserved": 512, "max_unit": 2048}}


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _tree(db, tag: str):
    root = provider_service.create_provider(db, name=f"root-{tag}", uuid=_uuid())
    child = provider_service.create_provider(db, name=f"child-{tag}", uuid=_uuid(),
                                             parent_uuid=root.uuid)
    inventory_service.replace_inventories(db, child.uuid, 0, INVENTORY,
                                          reserved_may_equal_total=True)
    trait_service.set_traits(db, child.uuid, ["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"], 1)
    aggregate_service.set_aggregates(db, root.uuid, [_uuid(), _uuid()], generation=0)
    return root, child


@pytest.fixture
def pipelines(monkeypatch) -> list[int]:
    """How many times psycopg's pipeline mode was entered."""
    entered: list[int] = []
    real = psycopg.Connection.pipeline

    def counted(self, *args, **kwargs):
        entered.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "pipeline", counted)
    return entered


def _position_at(conn, row_id: int) -> feed.Position:
    """Where a reader that stands on row ``row_id`` now is."""
    return feed.Position(row_id, feed.stamp_of(conn, row_id), feed.epoch(conn))


def _by_sqlalchemy(conn, root_ids) -> dict:
    return store.assemble([list(conn.execute(query, params))
                           for query, params in store.tree_queries(conn, root_ids)])


@pytest.mark.parametrize("one_by_one", [store.ONE_BY_ONE_MAX, 1],
                         ids=["tree by tree", "as one array"])
def test_trees_read_together_are_what_sqlalchemy_reads(db, pipelines, monkeypatch,
                                                       one_by_one):
    monkeypatch.setattr(store, "ONE_BY_ONE_MAX", one_by_one)
    one, _ = _tree(db, "one")
    two, child = _tree(db, "two")
    _tree(db, "other")
    roots = [one.id, two.id]
    with db.read() as conn:
        want = _by_sqlalchemy(conn, roots)
        first = store.load(conn, roots)  # learns each statement (once per process)
        pipelines.clear()
        again = store.load(conn, roots)  # sends them together on PostgreSQL
    assert first == want and again == want
    assert {p.root_id for p in want.values()} == {one.id, two.id} and len(want) == 4
    loaded = want[child.id]
    vcpu = loaded.inventories["VCPU"]
    assert vcpu[:3] + vcpu[4:] == (8, 0, 1, 1, 16.0)
    assert isinstance(vcpu[5], float)
    assert loaded.traits == {"HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
    assert isinstance(loaded.created_at, datetime.datetime)
    assert len(want[one.id].aggregates) == 2
    assert len(pipelines) == (1 if db.backend == "postgresql" else 0)


def test_no_roots_read_nothing(db):
    _tree(db, "only")
    with db.read() as conn:
        assert store.load(conn, []) == {}
        assert store.tree_queries(conn, []) == []


def test_the_feed_and_the_trees_it_names_come_from_one_snapshot(db, pipelines):
    root, child = _tree(db, "fed")
    with db.read() as conn:
        head = feed.head(conn)
    inventory_service.replace_inventories(db, child.uuid, 2, {"VCPU": {"total": 2}},
                                          reserved_may_equal_total=True)
    for _ in range(2):  # learn, then together
        with db.read() as conn:
            position = _position_at(conn, head - 1)
            found, trees = catch_up.read(conn, position, (), [root.id])
            assert not found.back
            entries = found.entries
            assert found == feed.read(conn, position)
            assert trees == store.load(conn, [root.id])
        assert [e.roots for e in entries][-1] == (root.id,)
        assert trees[child.id].inventories["VCPU"][0] == 2
        assert set(trees[child.id].inventories) == {"VCPU"}
    if db.backend == "postgresql":
        assert pipelines


def test_feed_rows_asked_for_by_id_come_too(db):
    root, _child = _tree(db, "gaps")
    with db.read() as conn:
        head = feed.head(conn)
        for _ in range(2):
            found, _trees = catch_up.read(conn, _position_at(conn, head),
                                          [head - 2, head - 1], [root.id])
            assert [e.id for e in found.entries] == [head - 2, head - 1]


@pytest.mark.postgresql
def test_an_error_in_statements_sent_together_is_sqlalchemys(db, pipelines):
    if db.backend != "postgresql":
        pytest.skip("only PostgreSQL sends statements together")
    ratio = sa.select(sa.literal_column("10") / sa.bindparam("d", type_=sa.Integer))
    one = sa.select(sa.literal_column("1"))
    with db.read() as conn:
        assert direct.together(conn, [(one, {}), (ratio, {"d": 2})]) == [[(1,)], [(5,)]]
        assert direct.together(conn, [(one, {}), (ratio, {"d": 5})]) == [[(1,)], [(2,)]]
        assert pipelines
    with pytest.raises(sa.exc.DataError), db.read() as conn:
        direct.together(conn, [(one, {}), (ratio, {"d": 0})])
    # The connection went back to the pool usable.
    with db.read() as conn:
        assert direct.together(conn, [(one, {}), (ratio, {"d": 1})]) == [[(1,)], [(10,)]]


@pytest.mark.postgresql
def test_a_connection_lost_under_statements_sent_together_is_a_503(db):
    if db.backend != "postgresql":
        pytest.skip("only PostgreSQL sends statements together")
    root, _child = _tree(db, "lost")
    with db.read() as conn:
        store.load(conn, [root.id])
    with pytest.raises(errors.DatabaseUnavailable), db.read() as conn:
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with db.engine.connect() as killer:
            killer.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        try:
            store.load(conn, [root.id])
        except sa.exc.DBAPIError as exc:
            assert exc.connection_invalidated
            assert faults.translate(exc) is not None
            raise
    with db.read() as conn:
        assert len(store.load(conn, [root.id])) == 2


def test_a_listener_on_statements_sees_each_one(db, pipelines):
    root, _child = _tree(db, "heard")
    with db.read() as conn:
        store.load(conn, [root.id])
    pipelines.clear()
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    sa.event.listen(db.engine, "before_cursor_execute", record)
    try:
        with db.read() as conn:
            assert len(store.load(conn, [root.id])) == 2
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", record)
    assert len([s for s in seen if "root_provider_id" in s]) == 4
    assert pipelines == []
