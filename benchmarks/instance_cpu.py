"""The CPU one process spends on each request of a scheduled instance.

Run: ``.venv/bin/python -m benchmarks.instance_cpu [--backend postgresql] [--hosts 1000]``

Makes the flat world of :mod:`benchmarks.claim_cpu` (``--hosts`` compute
hosts with VCPU, MEMORY_MB and DISK_GB) on a fresh database, then, as nova's
scheduler does for each instance, one request after another through the
API's WSGI app in this process:

* ``GET /allocation_candidates`` with nova's ``limit=1000``;
* ``GET /allocations/{consumer}`` (the scheduler reads what the instance
  holds before it claims);
* ``PUT /allocations/{consumer}``: the claim, on the hosts in turn, so each
  answer after the first has trees to search again;
* ``DELETE /allocations/{consumer}`` of the instance claimed ``--held``
  instances before, so the world stays about as full.

Prints the CPU time of this thread (``time.thread_time``) per request,
median and mean in microseconds, after ``--warm-up`` instances: SQLite's
own work is in it, a database server's is not, nor is an HTTP server's.
Asserts nothing but that every request succeeded.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

from benchmarks import claim_cpu
from tests.harness import backends

PATH = ("/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10"
        "&limit=1000")
KINDS = ("GET candidates", "GET consumer", "PUT", "DELETE")


def run(ops: claim_cpu.Request, hosts: list[str], instances: int, held: list[str],
        keep: int) -> dict[str, list[float]]:
    """CPU seconds of each request of ``instances`` instances, by kind."""
    spent: dict[str, list[float]] = {kind: [] for kind in KINDS}

    def timed(kind: str, method: str, path: str, status: int) -> None:
        start = time.thread_time()
        response = ops.client.request(method, path)
        spent[kind].append(time.thread_time() - start)
        if response.status != status:
            raise SystemExit(f"unexpected answer to {method} {path}: {response!r}")

    for i in range(instances):
        consumer = str(uuidlib.uuid4())
        timed("GET candidates", "GET", PATH, 200)
        timed("GET consumer", "GET", f"/allocations/{consumer}", 200)
        start = time.thread_time()
        ops.claim(consumer, hosts[(i * 37) % len(hosts)])
        spent["PUT"].append(time.thread_time() - start)
        held.append(consumer)
        if len(held) > keep:
            timed("DELETE", "DELETE", f"/allocations/{held.pop(0)}", 204)
    return spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "mysql"),
                        default="sqlite")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--held", type=int, default=50,
                        help="instances held before the oldest is deleted")
    parser.add_argument("--warm-up", type=int, default=100,
                        help="instances scheduled before the timed ones")
    args = parser.parse_args(argv)
    if args.backend != "sqlite" and args.backend not in backends.SERVER_URLS:
        parser.error(f"no server for {args.backend}: set ALLOTMENT_TEST_PG_URL or "
                     "ALLOTMENT_TEST_MYSQL_URL")

    from allotment.service import setup
    from allotment.storage import db as db_mod
    from allotment.storage import migration

    with tempfile.TemporaryDirectory(prefix="instance-cpu.") as tmp:
        url = backends.create_database(args.backend, Path(tmp), prefix="instance_cpu")
        db = db_mod.Database(db_mod.create_engine(url))
        try:
            migration.upgrade(db.engine)
            setup.sync_standards(db)
            hosts = claim_cpu.make_world(db, args.hosts)
            ops = claim_cpu.Request(db, url)
            held: list[str] = []
            run(ops, hosts, args.warm_up, held, args.held)
            spent = run(ops, hosts, args.instances, held, args.held)
        finally:
            db.dispose()
            backends.drop_database(args.backend, url)
    print(f"{args.backend}, {args.hosts} flat hosts, {args.instances} instances: "
          "CPU us per request (median / mean)")
    for kind, seconds in spent.items():
        print(f"  {kind:15s} {1e6 * statistics.median(seconds):7.0f} / "
              f"{1e6 * statistics.fmean(seconds):7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
