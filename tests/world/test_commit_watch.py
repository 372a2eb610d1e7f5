"""A replica skips reading the change feed when nothing was committed.

On SQLite, storage.watch tells from ``PRAGMA data_version`` whether any
connection committed since the replica last caught up; on PostgreSQL and
MySQL a probe on a connection of its own asks whether the feed has a row
past the last one applied.  Only then is the feed read through the pool.
Skipping must never hide a commit: not one from another connection of this
process, not one from another OS process, not one made while the replica
was catching up, and a probe that fails must not turn into a wrong answer.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import textwrap
import uuid

import pytest

from allotment.service import inventories as inventory_service
from allotment.service import resource_providers as provider_service
from allotment.storage import db as db_mod
from allotment.storage import feed, watch
from allotment.storage.watch import CommitWatch
from allotment.world.sync import Gap, Replica


@pytest.fixture
def feed_reads(monkeypatch) -> list[int]:
    """Every read of the feed after a given id, as the id."""
    calls: list[int] = []
    real = feed.read

    def counted(conn, position, also=()):
        calls.append(position.id)
        return real(conn, position, also)

    monkeypatch.setattr(feed, "read", counted)
    return calls


def test_the_mark_moves_only_with_a_commit(tmp_path):
    path = tmp_path / "w.sqlite"
    engine = db_mod.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    watch = CommitWatch(engine)
    first = watch.mark()
    assert first is not None
    assert watch.mark() == first
    with engine.connect() as conn:  # a read commits nothing
        conn.exec_driver_sql("SELECT count(*) FROM t").scalar()
    assert watch.mark() == first
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    second = watch.mark()
    assert second != first
    other = sqlite3.connect(path)  # a connection the engine knows nothing of
    other.execute("INSERT INTO t VALUES (2)")
    other.commit()
    other.close()
    assert watch.mark() != second
    watch.close()
    engine.dispose()


def test_no_mark_where_it_would_say_nothing(tmp_path):
    memory = db_mod.create_engine("sqlite://")
    assert CommitWatch(memory).mark() is None
    uri = db_mod.create_engine(f"sqlite:///file:{tmp_path}/m?mode=memory&uri=true")
    assert CommitWatch(uri).mark() is None


def test_a_quiet_database_is_not_read_again(db, feed_reads):
    replica = Replica(db)
    replica.catch_up()
    feed_reads.clear()
    for _ in range(3):
        with replica.current():
            pass
    assert feed_reads == []


def test_a_commit_by_another_process_is_seen_next(db, database_url, feed_reads):
    replica = Replica(db)
    replica.catch_up()
    script = textwrap.dedent(f"""
        from allotment.service import resource_providers as rps
        from allotment.storage import db as db_mod
        d = db_mod.Database(db_mod.create_engine({database_url!r}))
        print(rps.create_provider(d, name="from-elsewhere").uuid)
        d.dispose()
    """)
    made = subprocess.run([sys.executable, "-c", script], check=True, timeout=120,
                          capture_output=True, text=True).stdout.strip()
    feed_reads.clear()
    with replica.current() as world:
        assert world.snapshot.get(made) is not None
    reads = len(feed_reads)
    assert reads >= 1
    with replica.current():
        pass
    assert len(feed_reads) == reads


def test_a_commit_made_while_catching_up_is_not_skipped(db, monkeypatch):
    """The mark is taken before the feed is read: a write committing after
    the read moves the next mark, and the next request reads it."""
    replica = Replica(db)
    replica.catch_up()
    rp = provider_service.create_provider(db, name="racing")
    real = replica._advance
    done = []

    def catch_up_then_commit():
        real()
        if not done:
            done.append(True)
            inventory_service.replace_inventories(db, rp.uuid, 0, {"VCPU": {"total": 4}},
                                                  reserved_may_equal_total=False)

    monkeypatch.setattr(replica, "_advance", catch_up_then_commit)
    with replica.current() as world:
        assert world.snapshot.get(rp.uuid) is not None
        assert world.snapshot.resources_of(rp.uuid) == {}
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (4, 0)}


def test_a_broken_watch_means_reading_the_feed(db, feed_reads, monkeypatch):
    replica = Replica(db)
    replica.catch_up()
    monkeypatch.setattr(db.watch, "mark", lambda: None)
    monkeypatch.setattr(db.probe, "newer_than", lambda position: None)
    feed_reads.clear()
    rp = provider_service.create_provider(db, name="seen")
    with replica.current() as world:
        assert world.snapshot.get(rp.uuid) is not None
    reads = len(feed_reads)
    with replica.current():
        pass
    assert len(feed_reads) == reads + 1


def test_a_probe_whose_connection_died_gives_way_then_comes_back(db, feed_reads, monkeypatch):
    if db.backend == "sqlite":
        pytest.skip("SQLite needs no probe")
    replica = Replica(db)
    replica.catch_up()
    assert db.probe.newer_than(replica.position) is False
    _kill(db, db.probe._conn.dbapi_connection)
    rp = provider_service.create_provider(db, name="after-the-cut")
    feed_reads.clear()
    with replica.current() as world:  # the probe fails; the pool answers
        assert world.snapshot.get(rp.uuid) is not None
    assert feed_reads
    assert db.probe.newer_than(replica.position) is None  # backing off
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)
    assert db.probe.newer_than(replica.position) is False  # connected again
    feed_reads.clear()
    with replica.current():
        pass
    assert feed_reads == []


def test_on_postgresql_the_probe_is_one_prepared_statement(db, monkeypatch):
    """The probe asks through libpq with a statement prepared once, not
    through a cursor that parses the text again every time."""
    if db.backend != "postgresql":
        pytest.skip("the libpq path is PostgreSQL's")
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)  # whatever earlier tests did
    replica = Replica(db)
    replica.catch_up()
    assert db.probe.newer_than(replica.position) is False
    pgconn = db.probe._pgconn
    assert pgconn is not None
    provider_service.create_provider(db, name="seen-by-the-prepared-probe")
    assert db.probe.newer_than(replica.position) is True
    assert db.probe._pgconn is pgconn  # the same connection, prepared once


def test_the_probe_reads_an_index_however_long_the_feed(db, monkeypatch):
    """The feed keeps an hour of writes: the probe's plan must not read them
    all, however often it runs (PostgreSQL makes a generic plan for a
    prepared statement after five runs)."""
    if db.backend != "postgresql":
        pytest.skip("the libpq path is PostgreSQL's")
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)
    with db.write() as conn:
        conn.exec_driver_sql(
            "INSERT INTO placement_changes (created_at, data) "
            "SELECT now(), '{}' FROM generate_series(1, 5000)")
    replica = Replica(db)
    replica.catch_up()
    for _ in range(12):
        assert db.probe.newer_than(replica.position) is False
    assert db.probe.newer_than(dataclasses.replace(replica.position, id=replica.head - 1)) is True
    pgconn = db.probe._pgconn
    takes = pgconn.exec_params(b"SELECT cardinality(parameter_types) FROM "
                               b"pg_prepared_statements WHERE name = $1", [watch.PREPARED_PROBE])
    arguments = b"(%d)" % replica.head if takes.get_value(0, 0) != b"0" else b""
    plan = pgconn.exec_(b"EXPLAIN EXECUTE " + watch.PREPARED_PROBE + arguments)
    lines = [plan.get_value(i, 0).decode() for i in range(plan.ntuples)]
    # (The epoch's one row may be read by a scan: it is one row.)
    assert lines and not any("Seq Scan on placement_changes" in line for line in lines), lines


def test_a_probe_whose_statement_fails_gives_way(db, monkeypatch):
    """A statement the server refuses (here: no longer prepared) is a
    failure like a lost connection: the caller reads the feed, and the
    probe prepares again on a new connection."""
    if db.backend != "postgresql":
        pytest.skip("the libpq path is PostgreSQL's")
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)
    replica = Replica(db)
    replica.catch_up()
    assert db.probe.newer_than(replica.position) is False
    db.probe._pgconn.exec_(b"DEALLOCATE " + watch.PREPARED_PROBE)
    assert db.probe.newer_than(replica.position) is None
    assert db.probe._pgconn is None
    assert db.probe.newer_than(replica.position) is False
    assert db.probe._pgconn is not None


def test_gaps_are_asked_for_the_usual_way(db, feed_reads):
    """Ids skipped by out-of-order commits are read with every request
    until they appear or are given up; the probe only asks past the head."""
    if db.backend == "sqlite":
        pytest.skip("SQLite commits in id order")
    replica = Replica(db)
    replica.catch_up()
    replica.gaps[replica.head + 10**9] = Gap(None, 0.0)
    feed_reads.clear()
    with replica.current():
        pass
    assert feed_reads


def _kill(db, dbapi_conn) -> None:
    """End the server session behind ``dbapi_conn``."""
    if db.backend == "postgresql":
        pid = dbapi_conn.info.backend_pid
        with db.autocommit() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
    else:
        thread_id = dbapi_conn.thread_id()
        with db.autocommit() as conn:
            conn.exec_driver_sql(f"KILL {int(thread_id)}")


def _postgresql_probe(db, monkeypatch) -> Replica:
    if db.backend != "postgresql":
        pytest.skip("questions asked ahead are PostgreSQL's libpq path")
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)
    replica = Replica(db)
    replica.catch_up()
    return replica


def test_a_question_asked_ahead_is_answered_to_its_asker(db, monkeypatch):
    replica = _postgresql_probe(db, monkeypatch)
    db.probe.ask()
    assert db.probe._pending is not None
    assert db.probe.newer_than(replica.position) is False  # the answer asked for
    assert db.probe._pending is None
    provider_service.create_provider(db, name="after-the-answer")
    assert db.probe.newer_than(replica.position) is True  # asked again, now


def test_an_answer_asked_ahead_never_serves_a_later_request(db, monkeypatch):
    import contextvars

    replica = _postgresql_probe(db, monkeypatch)
    db.probe.ask()  # a request that began before the commit
    provider_service.create_provider(db, name="committed-in-between")
    # Another request, begun after the commit: the earlier question's answer
    # may predate the commit, so it is thrown away and the question asked anew.
    later = contextvars.Context()
    assert later.run(db.probe.newer_than, replica.position) is True
    assert db.probe._pending is None
    # The first request no longer has an answer waiting: it asks again too.
    assert db.probe.newer_than(replica.position) is True


def test_a_question_nobody_took_ends_with_its_request(db, monkeypatch):
    replica = _postgresql_probe(db, monkeypatch)
    db.probe.ask()
    db.probe.settle()
    assert db.probe._pending is None
    provider_service.create_provider(db, name="after-the-settled-question")
    assert db.probe.newer_than(replica.position) is True
    db.probe.settle()  # nothing asked: nothing to do
    db.probe.ask()
    db.probe.ask()  # asked twice: the first answer is thrown away unread
    assert db.probe.newer_than(replica.position) is True
    far_behind = dataclasses.replace(replica.position, id=replica.head - 10**9)
    assert db.probe.newer_than(far_behind) is True


def test_a_question_asked_ahead_on_a_dead_connection_gives_way(db, feed_reads, monkeypatch):
    replica = _postgresql_probe(db, monkeypatch)
    _kill(db, db.probe._conn.dbapi_connection)
    rp = provider_service.create_provider(db, name="after-the-asked-cut")
    db.probe.ask()  # a request arrives: the question goes nowhere
    feed_reads.clear()
    with replica.current() as world:  # no answer comes; the pool answers
        assert world.snapshot.get(rp.uuid) is not None
    assert feed_reads
    db.probe.settle()
    assert db.probe.newer_than(replica.position) is False  # connected again


def test_a_read_over_http_takes_the_answer_it_asked_for_ahead(app, db, database_url,
                                                             monkeypatch):
    from tests.harness.wsgi_client import Client

    _postgresql_probe(db, monkeypatch)
    api = Client(app)
    assert api.get("/resource_providers").status == 200
    other = db_mod.Database(db_mod.create_engine(database_url))  # another API process
    try:
        rp = provider_service.create_provider(other, name="written-elsewhere")
    finally:
        other.dispose()
    asked_now = []
    real = db.probe._ask_libpq
    monkeypatch.setattr(db.probe, "_ask_libpq",
                        lambda head: asked_now.append(head) or real(head))
    resp = api.get(f"/resource_providers/{rp.uuid}")
    assert resp.status == 200 and resp.json["name"] == "written-elsewhere"
    # Answered by the question sent when the request arrived, not a second one.
    assert asked_now == [] and db.probe._pending is None
    # A write asks nothing ahead.
    assert api.post("/resource_providers", json={"name": "a-write"}).status == 200
    assert db.probe._pending is None


@pytest.fixture
def probed(db, monkeypatch):
    """(a host with inventory, a function that claims n VCPUs on it one by
    one, a replica caught up) on a server with a probe."""
    from allotment.service import allocations as allocation_service
    from allotment.service.consumers import ConsumerRequest

    if db.backend == "sqlite":
        pytest.skip("SQLite needs no probe")
    monkeypatch.setattr(watch, "PROBE_BACKOFF", 0.0)
    rp = provider_service.create_provider(db, name=f"probe-rows-{uuid.uuid4()}")
    inventory_service.replace_inventories(db, rp.uuid, 0, {"VCPU": {"total": 1000}},
                                          reserved_may_equal_total=False)

    def claim(n: int) -> None:
        for _ in range(n):
            allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
                ConsumerRequest(str(uuid.uuid4()), "p", "u"), {rp.uuid: {"VCPU": 1}}),
                attempts=5)

    replica = Replica(db)
    replica.catch_up()
    return rp, claim, replica


def test_a_world_a_few_claims_behind_catches_up_from_the_probe(db, feed_reads, probed):
    """The probe brings the feed's last rows (PostgreSQL), or those from
    the world's own on (MySQL): a world fewer than RECENT_ROWS claims
    behind applies them without reading the feed."""
    rp, claim, replica = probed
    feed_reads.clear()
    claim(3)
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, 3)}
    assert feed_reads == []
    claim(1)
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, 4)}
    assert feed_reads == []
    fresh = Replica(db)
    fresh.rebuild()
    assert replica.position == fresh.position


def test_more_claims_than_the_probe_brings_are_read_from_the_feed(db, feed_reads, probed):
    rp, claim, replica = probed
    feed_reads.clear()
    claim(watch.RECENT_ROWS + 1)
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, watch.RECENT_ROWS + 1)}
    assert len(feed_reads) == 1


def test_a_reshape_is_read_from_the_feed_with_its_trees(db, feed_reads, probed):
    """Rows that change trees are applied with the trees read in their own
    snapshot: never from the probe's rows alone."""
    rp, claim, replica = probed
    feed_reads.clear()
    claim(1)
    other = provider_service.create_provider(db, name="probe-rows-reshaped")
    with replica.current() as world:
        assert world.snapshot.get(other.uuid) is not None
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, 1)}
    assert len(feed_reads) == 1


def test_the_probes_rows_never_hide_a_database_gone_back(db, feed_reads, probed):
    """The world's own row comes back with another stamp (the database lost
    it and handed its id out again): the probe's rows are not applied, the
    feed is read, and the world is read again."""
    rp, claim, replica = probed
    rebuilds = replica.rebuilds
    claim(1)
    with db.write() as conn:
        conn.exec_driver_sql(
            f"UPDATE placement_changes SET stamp = stamp + 1 WHERE id = {replica.head}")
    feed_reads.clear()
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, 1)}
    assert feed_reads and replica.rebuilds == rebuilds + 1


def test_on_postgresql_an_id_missing_among_the_probes_rows_is_read_from_the_feed(
        db, feed_reads, probed):
    """On PostgreSQL a row can commit before one with a lower id: an id
    missing among the probe's rows may still come, and only the feed's read
    notes it as a gap to ask for again."""
    if db.backend != "postgresql":
        pytest.skip("rows commit in id order elsewhere")
    rp, claim, replica = probed
    claim(1)
    with db.write() as conn:
        # An id taken by a writer that has not committed yet, and the next.
        ids = "nextval(pg_get_serial_sequence('placement_changes', 'id'))"
        pending = conn.exec_driver_sql(f"SELECT {ids}").scalar()
        conn.exec_driver_sql("INSERT INTO placement_changes (id, created_at, data, stamp)"
                             f" VALUES ({ids}, now(), '{{}}', 7)")
    feed_reads.clear()
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (1000, 1)}
    assert len(feed_reads) == 1
    assert pending in replica.gaps
