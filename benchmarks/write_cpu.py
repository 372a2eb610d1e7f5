"""Where the CPU time of loading a world through the API goes.

Run: ``.venv/bin/python -m benchmarks.write_cpu [--backend postgresql] [--hosts 500]``

Loads the same flat world (provider, inventory and trait writes) into
allotment and into upstream Placement 16.0.0, one after the other, each
under gunicorn with 2 workers on a fresh database, and reports the write
rate with the CPU seconds per request spent by the service's processes, by
the database server (PostgreSQL; SQLite runs inside the workers) and by the
loading client.  On a machine with few cores the rate is bound by their sum,
so this says what a faster service can and cannot gain.  Reads ``/proc``
(Linux).  Prints one line per service; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from sqlalchemy.engine import url as sa_url

from benchmarks.side_by_side.client import load
from benchmarks.side_by_side.worlds import SHAPES
from tests.harness import pg
from tests.harness.servers import start_allotment, start_upstream

STARTERS = {"allotment": start_allotment, "upstream": start_upstream}


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of ``pids`` so far (gone ones count 0)."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    return {pid: cpu_seconds([pid]) for pid in pids}


def _backends(database: str | None) -> list[int]:
    """PostgreSQL's backends serving ``database`` (their title names it);
    none on SQLite.  Other servers' and other databases' processes -- the
    test suite runs beside this -- are not this run's work."""
    if database is None:
        return []
    out = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True,
                         check=False).stdout
    pids = []
    for pid in out.split():
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except FileNotFoundError:
            continue
        if f" {database} " in title.replace("\0", " ") + " ":
            pids.append(int(pid))
    return pids


def _grown(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU spent between two readings by the processes of the second (a
    process that began meanwhile counts whole; one that ended is lost)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def measure(name: str, backend: str, hosts: int, threads: int, pg_server: str | None,
            workdir: Path) -> str:
    world = SHAPES["flat"](hosts)
    if backend == "sqlite":
        url = f"sqlite:///{workdir / name}.sqlite"
    else:
        url = pg.create_database(pg_server, prefix=f"write_cpu_{name}")
    database_name = None if backend == "sqlite" else sa_url.make_url(url).database
    try:
        with STARTERS[name](url, workdir / name, workers=2) as server:
            pids = server.pids
            before = (cpu_seconds(pids), cpu_by_pid(_backends(database_name)),
                      time.process_time())
            made, seconds = load(server.url, world, threads=threads)
            after = (cpu_seconds(pids), cpu_by_pid(_backends(database_name)),
                     time.process_time())
    finally:
        if backend != "sqlite":
            pg.drop_database(url)
    service = 1000 * (after[0] - before[0]) / made
    database = 1000 * _grown(before[1], after[1]) / made
    client = 1000 * (after[2] - before[2]) / made
    return (f"{name}: {made / seconds:.0f} requests/s; CPU ms per request: "
            f"service {service:.2f}, database server {database:.2f}, client {client:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="postgresql")
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None,
                        help="loading clients (default: 8 on PostgreSQL, 1 on SQLite, "
                        "where upstream fails concurrent writers)")
    args = parser.parse_args(argv)
    threads = args.threads or (1 if args.backend == "sqlite" else 8)
    pg_server = None
    with tempfile.TemporaryDirectory(prefix="write-cpu.") as tmp:
        workdir = Path(tmp)
        if args.backend == "postgresql":
            pg_server = os.environ.get("ALLOTMENT_TEST_PG_URL")
            if not pg_server:
                parser.error("ALLOTMENT_TEST_PG_URL must name a PostgreSQL server")
        for name in STARTERS:
            print(measure(name, args.backend, args.hosts, threads, pg_server, workdir),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
