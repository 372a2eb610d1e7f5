"""CPU time spent by the processes that serve one service during a round.

The API's cost is its gunicorn master and workers.  The database's cost is
the server processes doing that service's work: on PostgreSQL the backends
connected to that service's database (``pg_stat_activity``), sampled while
the round runs so that a backend that exits mid-round still counts up to
its last sample; on MariaDB the server process, which the benchmark starts
for the run alone (so every statement it runs is the benchmark's); on
SQLite nothing, the database being inside the API processes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from allotment.storage import db as db_mod

_TICK = os.sysconf("SC_CLK_TCK")


def process_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of ``pid`` so far (None once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may hold spaces; the fields after it do not.
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


class Meter:
    """CPU seconds of a changing set of processes between start() and stop().

    ``pids`` is asked for the processes every ``interval`` seconds; a process
    first seen after start() counts from zero (it began during the round).
    """

    def __init__(self, pids: Callable[[], list[int]], interval: float = 0.25) -> None:
        self._pids, self._interval = pids, interval
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self, starting: bool = False) -> None:
        for pid in self._pids():
            seconds = process_seconds(pid)
            if seconds is None:
                continue
            if pid not in self._first:
                self._first[pid] = seconds if starting else 0.0
            self._last[pid] = seconds

    def start(self) -> None:
        self._sample(starting=True)

        def run() -> None:
            while not self._stop.wait(self._interval):
                self._sample()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        close = getattr(self._pids, "close", None)
        if close is not None:
            close()
        return sum(self._last[p] - self._first[p] for p in self._last)


def gunicorn_pids(server) -> Callable[[], list[int]]:
    return lambda: server.pids


def pg_backends(database_url: str) -> Callable[[], list[int]]:
    """The pids of the backends connected to ``database_url``'s database."""
    url = sa.engine.make_url(db_mod.normalise_url(database_url))
    engine = sa.create_engine(url.set(database="postgres"), pool_size=1)
    query = sa.text("SELECT pid FROM pg_stat_activity WHERE datname = :d")

    def pids() -> list[int]:
        with engine.connect() as conn:
            return list(conn.execute(query, {"d": url.database}).scalars())

    pids.close = engine.dispose  # type: ignore[attr-defined]
    return pids


def mysqld(pid_file: Path) -> Callable[[], list[int]]:
    pid = int(pid_file.read_text().split()[0])
    return lambda: [pid]


def none() -> list[int]:
    return []
