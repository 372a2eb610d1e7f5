"""Memory of a running allotment-api on a NUMA world, process by process.

Run: ``ALLOTMENT_UPSTREAM_VENV=... .venv/bin/python benchmarks/server_memory.py
[--hosts 10000] [--workers 2] [--database DIR]``.

Fills a SQLite database with the NUMA shape of ``benchmarks/side_by_side``
(upstream's schema, then allotment's ``db sync``; kept in ``--database`` and
reused when it is there), starts allotment-api with ``--workers`` workers,
prints RSS / PSS / USS of every process (``/proc/PID/smaps_rollup``) and
their PSS summed, once before any answer and once after ``--queries``
candidates answers asked over as many connections at a time as there are
workers (so that each answers some): the memory figures of the side-by-side
run (``scripts/benchmark mix``) in a minute, without the hosts' reports and
without upstream.  The workers' own memory (USS) before any answer is what
starting cost them; what it grows by is what answering writes to.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.side_by_side import fill, flavors
from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.measure import distinct_mb, memory_mb
from tests.harness.servers import start_allotment


def _filled(directory: Path, hosts: int) -> str:
    path = directory / f"numa-{hosts}.sqlite"
    url = f"sqlite:///{path}"
    if path.exists():
        return url
    directory.mkdir(parents=True, exist_ok=True)
    rows = fill.rows(flavors.world("numa", hosts), 0)
    fill.fill(url, rows, directory / "upstream")
    config = directory / "manage.conf"
    config.write_text(f"[placement_database]\nconnection = {url}\n")
    subprocess.run([str(Path(sys.executable).with_name("allotment-manage")),
                    "--config-file", str(config), "db", "sync"],
                   check=True, capture_output=True, text=True)
    return url


def _show(pids: list[int], when: str) -> None:
    print(when)
    total = 0.0
    for i, pid in enumerate(pids):
        rss, pss, uss = memory_mb(pid)
        total += pss
        role = "main" if i == 0 else f"worker {i}"
        print(f"  {role:9} RSS {rss:6.1f}  PSS {pss:6.1f}  USS {uss:6.1f} MB")
    print(f"  PSS summed {total:.1f} MB")
    distinct = distinct_mb(pids)
    if distinct is not None:
        print(f"  pages mapped, each counted once {distinct:.1f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database", type=Path,
                        default=Path(tempfile.gettempdir()) / "allotment-server-memory")
    parser.add_argument("--queries", type=int, default=20,
                        help="candidates queries asked (each worker answers some)")
    args = parser.parse_args(argv)
    url = _filled(args.database, args.hosts)
    menu = flavors.FLAVORS["numa"]
    with tempfile.TemporaryDirectory(prefix="allotment-server-memory.") as work:
        start = time.perf_counter()
        server = start_allotment(url, Path(work), workers=args.workers)
        try:
            listening = time.perf_counter() - start

            def ask(i: int) -> None:
                # A connection each, several at once: every worker answers.
                status, body, _ = Client(server.url, timeout=120).request(
                    "GET", menu[i % len(menu)].path)
                if status != 200:
                    raise RuntimeError(f"candidates answer {status}: {body[:300]!r}")

            time.sleep(2)
            print(f"listening after {listening:.1f} s")
            _show(server.pids, "before any answer")
            with ThreadPoolExecutor(args.workers) as pool:
                list(pool.map(ask, range(args.queries)))
            time.sleep(1)
            _show(server.pids, f"after {args.queries} candidates answers")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
