"""A replica skips reading the change feed when nothing was committed.

On SQLite, storage.watch tells from ``PRAGMA data_version`` whether any
connection committed since the replica last caught up; only then is the
feed read.  Skipping must never hide a commit: not one from another
connection of this process, not one from another OS process, not one made
while the replica was catching up.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from allotment.service import inventories as inventory_service
from allotment.service import resource_providers as provider_service
from allotment.storage import db as db_mod
from allotment.storage import feed
from allotment.storage.watch import CommitWatch
from allotment.world.sync import Replica


@pytest.fixture
def feed_reads(monkeypatch) -> list[int]:
    """Every read of the feed after a given id, as the id."""
    calls: list[int] = []
    real = feed.read

    def counted(conn, after, also=()):
        calls.append(after)
        return real(conn, after, also)

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
    if db.backend == "sqlite":
        assert feed_reads == []
    else:
        # No exact commit counter there: the feed is read every time.
        assert len(feed_reads) == 3


def test_a_commit_by_another_process_is_seen_next(db, database_url, feed_reads):
    if db.backend != "sqlite":
        pytest.skip("the commit counter is SQLite's")
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
    real = replica._catch_up
    done = []

    def catch_up_then_commit():
        real()
        if not done:
            done.append(True)
            inventory_service.replace_inventories(db, rp.uuid, 0, {"VCPU": {"total": 4}},
                                                  reserved_may_equal_total=False)

    monkeypatch.setattr(replica, "_catch_up", catch_up_then_commit)
    with replica.current() as world:
        assert world.snapshot.get(rp.uuid) is not None
        assert world.snapshot.resources_of(rp.uuid) == {}
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (4, 0)}


def test_a_broken_watch_means_reading_the_feed(db, feed_reads, monkeypatch):
    replica = Replica(db)
    replica.catch_up()
    monkeypatch.setattr(db.watch, "mark", lambda: None)
    feed_reads.clear()
    rp = provider_service.create_provider(db, name="seen")
    with replica.current() as world:
        assert world.snapshot.get(rp.uuid) is not None
    reads = len(feed_reads)
    with replica.current():
        pass
    assert len(feed_reads) == reads + 1
