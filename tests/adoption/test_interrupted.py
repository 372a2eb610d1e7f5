"""An adoption stopped half-way (the process killed) loses nothing of
upstream's, and the next ``db sync`` either finishes the adoption, exactly
as an uninterrupted one, or refuses with a message and changes nothing.

To stop it half-way for certain, another session holds a lock on one of
upstream's tables until the adoption waits for it, and the adoption is
killed then (PostgreSQL, MariaDB); SQLite changes its schema in one
transaction, so it is killed half-way through the time a clean adoption of
the same database takes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from benchmarks import upstream_fill
from benchmarks.adoption import UPSTREAM_TABLES
from tests.adoption import dump, manage
from tests.harness.backends import BACKENDS

pytestmark = pytest.mark.slow
HOSTS = 20
LOCKED = "resource_provider_traits"


def _upstream_database(make_database, backend: str, workdir: Path) -> str:
    url = make_database(backend)
    synced = manage.placement_manage(workdir, url, "db", "sync")
    assert synced.code == 0, synced.text
    engine = dump.engine_for(url)
    upstream_fill.fill(engine, HOSTS, 4)
    engine.dispose()
    return url


def _upstream_rows(url: str) -> dict:
    rows = dump.rows(url)
    return {t: rows.get(t) for t in (*UPSTREAM_TABLES, "alembic_version")}


def _start_sync(workdir: Path, url: str) -> subprocess.Popen:
    conf = manage.write_conf(workdir, url)
    script = Path(sys.executable).with_name("allotment-manage")
    return subprocess.Popen([str(script), "--config-file", str(conf), "db", "sync"],
                            cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _waiting(conn: sa.Connection, database: str) -> int:
    if conn.dialect.name == "postgresql":
        return conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
            "AND wait_event_type = 'Lock'"), {"db": database}).scalar_one()
    # MariaDB names a statement held by a table lock after the step it is
    # at ("Committing alter table to storage engine"), so: one of the
    # adoption's statements running for seconds.
    return conn.execute(sa.text(
        "SELECT count(*) FROM information_schema.processlist WHERE db = :db "
        "AND command = 'Query' AND time >= 2 AND id <> CONNECTION_ID()"),
        {"db": database}).scalar_one()


def _others(conn: sa.Connection, database: str) -> int:
    """Sessions on the database besides the caller's (the killed run's
    server side ends a moment after it)."""
    if conn.dialect.name == "postgresql":
        return conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
            "AND pid <> pg_backend_pid()"), {"db": database}).scalar_one()
    return conn.execute(sa.text(
        "SELECT count(*) FROM information_schema.processlist WHERE db = :db "
        "AND id <> CONNECTION_ID()"), {"db": database}).scalar_one()


def _kill(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.communicate()[0]


def _interrupt_behind_a_lock(workdir: Path, url: str) -> bool:
    """Kill an adoption while it waits for a lock on one of upstream's
    tables; whether it was caught waiting (not ended by itself first)."""
    engine = dump.engine_for(url)
    database = engine.url.database
    # Outside a transaction: PostgreSQL shows a transaction one snapshot
    # of pg_stat_activity.
    watcher = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as locker:
            trans = locker.begin()
            if locker.dialect.name == "postgresql":
                locker.execute(sa.text(f"LOCK TABLE {LOCKED} IN EXCLUSIVE MODE"))
            else:
                locker.execute(sa.text(f"LOCK TABLES {LOCKED} READ"))
            proc = _start_sync(workdir, url)
            deadline = time.monotonic() + 120
            caught = False
            while proc.poll() is None and time.monotonic() < deadline and not caught:
                caught = bool(_waiting(watcher, database))
                time.sleep(0.1)
            _kill(proc)
            if locker.dialect.name == "mysql":
                locker.execute(sa.text("UNLOCK TABLES"))
            trans.rollback()
        deadline = time.monotonic() + 60
        while _others(watcher, database) and time.monotonic() < deadline:
            time.sleep(0.2)
        return caught
    finally:
        watcher.close()
        engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_interrupted_adoption_loses_nothing(backend, fresh_database, tmp_path):
    url = _upstream_database(fresh_database, backend, tmp_path / "a")
    reference = _upstream_database(fresh_database, backend, tmp_path / "b")
    started = time.monotonic()
    clean = manage.allotment_manage(tmp_path / "b", reference, "db", "sync")
    seconds = time.monotonic() - started
    assert clean.code == 0, clean.text
    before = _upstream_rows(url)

    if backend == "sqlite":
        proc = _start_sync(tmp_path / "a", url)
        time.sleep(seconds / 2)
        _kill(proc)
    else:
        assert _interrupt_behind_a_lock(tmp_path / "a", url), "never waited for the lock"
    assert _upstream_rows(url) == before, "the interrupted adoption changed upstream's rows"

    again = manage.allotment_manage(tmp_path / "a", url, "db", "sync")
    assert "Traceback" not in again.text, again.text
    if again.code == 0:
        differences = dump.differences(dump.schema(reference), dump.schema(url))
        assert not differences, "\n".join(differences)
        assert _upstream_rows(url) == _upstream_rows(reference)
    else:
        assert again.text.strip(), "refused without a message"
        assert _upstream_rows(url) == before
