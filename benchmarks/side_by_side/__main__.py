"""allotment and upstream Placement 16.0.0, side by side, in one run.

Run: ``scripts/benchmark [--backends sqlite postgresql] [--shapes flat numa
sharing wide] [--hosts 1000] [--repeat 15] [--output FILE]``; ``--quick``
runs tiny worlds in a minute.  Upstream is installed into a venv of its own
(``ALLOTMENT_UPSTREAM_VENV``, default ``.upstream/venv``); PostgreSQL is the
server at ``ALLOTMENT_TEST_PG_URL`` or, without it, a private one started for
the run.  Each (backend, shape, size) gets fresh databases and fresh
servers with the same number of gunicorn workers; both are loaded through the
API with the same requests, then measured.  Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from benchmarks.side_by_side import measure, report
from benchmarks.side_by_side.client import Client, load
from benchmarks.side_by_side.worlds import SHAPES
from tests.harness import pg
from tests.harness.servers import start_allotment, start_upstream

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("upstream", "allotment")


def _databases(backend: str, stack: ExitStack, workdir: Path, pg_url: str | None):
    if backend == "sqlite":
        return {n: f"sqlite:///{workdir / n}.sqlite" for n in NAMES}
    urls = {n: pg.create_database(pg_url, prefix=f"bench_{n}") for n in NAMES}
    for url in urls.values():
        stack.callback(pg.drop_database, url)
    return urls


def _private_pg(stack: ExitStack) -> str:
    datadir = tempfile.mkdtemp(prefix="allotment-bench-pg.")
    script = str(ROOT / "scripts" / "pg-test-server")
    url = subprocess.run([script, "start", datadir], check=True, capture_output=True,
                         text=True).stdout.strip()
    stack.callback(subprocess.run, [script, "stop", datadir], check=False)
    return url


def run_world(backend: str, shape: str, hosts: int, args, pg_url: str | None,
              out: report.Report) -> None:
    world = SHAPES[shape](hosts)
    title = f"{backend}, {shape}, {hosts} hosts ({world.providers} providers)"
    print(f"== {title}", file=sys.stderr, flush=True)
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench.")))
        urls = _databases(backend, stack, workdir, pg_url)
        servers = {
            "upstream": stack.enter_context(start_upstream(
                urls["upstream"], workdir / "upstream", workers=args.workers)),
            "allotment": stack.enter_context(start_allotment(
                urls["allotment"], workdir / "allotment", workers=args.workers)),
        }
        clients = {n: Client(s.url, timeout=args.timeout) for n, s in servers.items()}
        section = out.section(title)
        for name in NAMES:
            # Upstream on SQLite fails concurrent writers ('database is
            # locked'), so SQLite worlds are written by one client.
            threads = 1 if backend == "sqlite" else args.load_threads
            made, seconds = load(servers[name].url, world, threads=threads)
            section.load[name] = made / seconds
            print(f"   loaded {name}: {made} requests in {seconds:.1f} s",
                  file=sys.stderr, flush=True)
        for query in world.queries:
            # One unmeasured round each: first-use costs are not the steady state.
            measure.alternate(clients, query.path, 1, args.budget)
            section.reads[query.label] = measure.alternate(
                clients, query.path, args.repeat, args.budget, fill=args.fill)
            print(f"   {query.label}: " + report.pair(section.reads[query.label]),
                  file=sys.stderr, flush=True)
        if shape in args.churn_shapes:
            path = world.queries[1].path  # limit=1000
            for name in NAMES:
                quiet = measure.alternate({name: clients[name]}, path, args.repeat,
                                          args.budget)[name]
                churned, writes = measure.under_churn(clients[name], world, path,
                                                      args.churn_seconds)
                # As many rounds as the quiet median it is compared with.
                first = measure.first_after_write(clients[name], world, path, args.repeat)
                section.churn[name] = (quiet, churned, first, writes)
        if shape in args.claim_shapes:
            for name in NAMES:
                section.claims[name] = measure.claims(clients[name], world,
                                                      args.claim_seconds)
        for name in NAMES:
            section.memory[name] = measure.worker_rss_mb(servers[name].pids)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mix"]:
        from benchmarks.side_by_side import mix_run
        return mix_run.main(argv[1:])
    parser = argparse.ArgumentParser(prog="scripts/benchmark")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"],
                        choices=["sqlite", "postgresql"])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--hosts", nargs="+", type=int, default=[1000])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds of one service's time per scenario at most")
    parser.add_argument("--fill", type=float, default=2.0,
                        help="seconds both services' reads of a scenario may take before"
                             " sampling stops past --repeat rounds (up to 101)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="a read taking longer is reported as timed out")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--load-threads", type=int, default=8)
    parser.add_argument("--churn-shapes", nargs="*", default=["flat", "numa"])
    parser.add_argument("--churn-seconds", type=float, default=10.0)
    parser.add_argument("--claim-shapes", nargs="*", default=["flat"])
    parser.add_argument("--claim-seconds", type=float, default=15.0)
    parser.add_argument("--quick", action="store_true",
                        help="tiny worlds, few samples: checks the benchmark itself")
    parser.add_argument("--output", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if args.quick:
        args.hosts, args.repeat, args.budget, args.fill = [20], 3, 5.0, 0.2
        args.churn_seconds, args.claim_seconds = 1.0, 1.0
    out = report.Report(" ".join(["scripts/benchmark", *argv]))
    with ExitStack() as stack:
        pg_url = None
        if "postgresql" in args.backends:
            pg_url = os.environ.get("ALLOTMENT_TEST_PG_URL") or _private_pg(stack)
        for backend in args.backends:
            for shape in args.shapes:
                for hosts in args.hosts:
                    run_world(backend, shape, hosts, args, pg_url, out)
    text = out.render()
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
