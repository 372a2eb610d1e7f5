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
import time
import uuid as uuidlib

from benchmarks import claim_cpu

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
    claim_cpu.require_server(parser, args.backend)
    with claim_cpu.flat_world(args.backend, args.hosts, "instance_cpu") as (db, url, hosts):
        ops = claim_cpu.Request(db, url)
        held: list[str] = []
        run(ops, hosts, args.warm_up, held, args.held)
        spent = run(ops, hosts, args.instances, held, args.held)
    claim_cpu.print_medians(f"{args.backend}, {args.hosts} flat hosts, "
                            f"{args.instances} instances", "request", spent)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
