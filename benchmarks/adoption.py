"""How long taking over a full upstream database, and handing it back, take.

Run: ``.venv/bin/python -m benchmarks.adoption --backend postgresql``
(or ``mysql``; ``--hosts 10000`` by default).  Creates upstream Placement
16.0.0's schema with its own ``placement-manage db sync``, fills it by bulk
SQL with a cloud of NUMA hosts (nine providers each, ``--consumers-per-host``
consumers each; see :mod:`benchmarks.upstream_fill`), then times
``allotment-manage db sync`` (adoption) and ``allotment-manage db downgrade
upstream`` (hand-back) and prints the numbers against the target (60 s
each).  Checks on the way that every upstream row is still there after each
step, and that upstream's ``placement-manage db version`` reads its head
revision after the hand-back.

The database server is ``--url`` (a server URL as ``scripts/pg-test-server``
prints it), else ``ALLOTMENT_TEST_PG_URL`` / ``ALLOTMENT_TEST_MYSQL_URL``,
else a throw-away server started for the run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import sqlalchemy as sa

from allotment.storage import db as db_mod
from benchmarks import upstream_fill
from tests.adoption import manage
from tests.harness import mysql, pg

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 60.0
_SCRIPT = {"postgresql": "pg-test-server", "mysql": "mysql-test-server"}
_ENV = {"postgresql": "ALLOTMENT_TEST_PG_URL", "mysql": "ALLOTMENT_TEST_MYSQL_URL"}
UPSTREAM_TABLES = ("allocations", "consumer_types", "consumers", "inventories",
                   "placement_aggregates", "projects", "resource_classes",
                   "resource_provider_aggregates", "resource_provider_traits",
                   "resource_providers", "traits", "users")


def _server(backend: str, url: str | None, stack: ExitStack) -> str:
    url = url or os.environ.get(_ENV[backend])
    if url:
        return url
    datadir = tempfile.mkdtemp(prefix=f"allotment-adoption-{backend}.")
    script = str(ROOT / "scripts" / _SCRIPT[backend])
    url = subprocess.run([script, "start", datadir], check=True, capture_output=True,
                         text=True).stdout.strip()
    stack.callback(subprocess.run, [script, "stop", datadir], check=False)
    return url


def counts(database_url: str) -> dict[str, int]:
    """Rows of each of upstream's tables."""
    engine = sa.create_engine(db_mod.normalise_url(database_url), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
                    for t in UPSTREAM_TABLES}
    finally:
        engine.dispose()


def _timed(label: str, run) -> tuple[float, manage.Result]:
    print(f"   {label} ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    if result.code != 0:
        raise SystemExit(f"{label} failed (exit {result.code}):\n{result.text[-4000:]}")
    return seconds, result


def run(backend: str, server_url: str, hosts: int, per_host: int, workdir: Path) -> dict:
    module = pg if backend == "postgresql" else mysql
    url = module.create_database(server_url, "allotment_adoption")
    try:
        out: dict[str, float | int] = {}
        out["upstream db sync"], _ = _timed("placement-manage db sync", lambda: (
            manage.placement_manage(workdir, url, "db", "sync")))
        engine = sa.create_engine(db_mod.normalise_url(url))
        start = time.perf_counter()
        filled = upstream_fill.fill(engine, hosts, per_host)
        engine.dispose()
        out["fill (SQL)"] = time.perf_counter() - start
        out["providers"], out["consumers"], out["rows"] = (filled.providers, filled.consumers,
                                                           filled.rows)
        before = counts(url)
        out["adopt"], _ = _timed("allotment-manage db sync", lambda: (
            manage.allotment_manage(workdir, url, "db", "sync")))
        if counts(url) != before:
            raise SystemExit(f"adoption changed upstream's rows: {before} -> {counts(url)}")
        out["hand back"], _ = _timed("allotment-manage db downgrade upstream", lambda: (
            manage.allotment_manage(workdir, url, "db", "downgrade", "upstream")))
        if counts(url) != before:
            raise SystemExit(f"hand-back changed upstream's rows: {before} -> {counts(url)}")
        version = manage.placement_manage(workdir, url, "db", "version").out.strip()
        if version != manage.UPSTREAM_HEAD:
            raise SystemExit(f"placement-manage db version after hand-back: {version!r}")
        return out
    finally:
        module.drop_database(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.adoption",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["postgresql", "mysql"], default="postgresql")
    parser.add_argument("--url", help="database server URL (default: a throw-away server)")
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--consumers-per-host", type=int, default=10)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        server_url = _server(args.backend, args.url, stack)
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="adoption.")))
        print(f"== {args.backend}, {args.hosts} NUMA hosts", file=sys.stderr, flush=True)
        out = run(args.backend, server_url, args.hosts, args.consumers_per_host, workdir)
    print(f"{args.backend}: {out['providers']} providers, {out['consumers']} consumers, "
          f"{out['rows']} rows")
    for label in ("upstream db sync", "fill (SQL)", "adopt", "hand back"):
        if label in out:
            verdict = ""
            if label in ("adopt", "hand back"):
                verdict = "  (target 60 s: " + (
                    "met)" if out[label] <= TARGET_SECONDS else "MISSED)")
            print(f"  {label:18s} {out[label]:8.1f} s{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
