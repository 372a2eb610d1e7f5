"""allotment against another checkout of itself, on the same worlds.

Run: ``.venv/bin/python -m benchmarks.side_by_side.ab OTHER_ALLOTMENT_API
[--shapes flat numa] [--hosts 1000] [--repeat 11]``, where
``OTHER_ALLOTMENT_API`` is the ``allotment-api`` script of the other
checkout's venv (say, main's; ``--other-revision allotment_0001`` for a
checkout older than the schema's last migration).  Each world of ``scripts/benchmark`` is
loaded once through this checkout's API into a SQLite file, copied, and
served by both (2 gunicorn workers each, one copy each); every query of the
world is then asked of both alternately (``measure.alternate``, as
``scripts/benchmark`` compares with upstream), so a machine shared with
other work slows both alike.  Prints p50s and the geometric mean of the
ratios.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import sqlalchemy as sa
from alembic import command

from allotment.storage import migration
from benchmarks.side_by_side import measure
from benchmarks.side_by_side.client import Client, load
from benchmarks.side_by_side.worlds import SHAPES
from tests.harness import servers

THIS = str(Path(sys.executable).with_name("allotment-api"))


def _start(script: str, url: str, workdir: Path) -> servers.Server:
    real = servers._allotment_script
    servers._allotment_script = lambda: script
    try:
        return servers.start_allotment(url, workdir, workers=2)
    finally:
        servers._allotment_script = real


def _migrate_down(path: Path, revision: str) -> None:
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        command.downgrade(migration.alembic_config(engine), revision)
    finally:
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.side_by_side.ab")
    parser.add_argument("other", help="the other checkout's allotment-api")
    parser.add_argument("--shapes", nargs="+", default=["flat", "numa"], choices=list(SHAPES))
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--fill", type=float, default=2.0)
    parser.add_argument("--other-revision", metavar="REV",
                        help="migrate the other's copy down to this revision of allotment's "
                             "schema first (an older checkout refuses a newer schema)")
    args = parser.parse_args(argv)
    ratios = []
    print("| world | scenario (p50 ms) | other | this | this/other |")
    print("|---|---|---|---|---|")
    for shape in args.shapes:
        world = SHAPES[shape](args.hosts)
        with tempfile.TemporaryDirectory(prefix="bench-ab.") as tmp:
            work = Path(tmp)
            loaded = work / "this.sqlite"
            with _start(THIS, f"sqlite:///{loaded}", work / "load") as server:
                load(server.url, world, threads=1)
            with sqlite3.connect(loaded) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copy(loaded, work / "other.sqlite")
            if args.other_revision:
                _migrate_down(work / "other.sqlite", args.other_revision)
            with _start(args.other, f"sqlite:///{work / 'other.sqlite'}",
                        work / "other") as other, \
                    _start(THIS, f"sqlite:///{loaded}", work / "this") as this:
                clients = {"other": Client(other.url, timeout=120),
                           "this": Client(this.url, timeout=120)}
                for query in world.queries:
                    measure.alternate(clients, query.path, 1, 30.0)
                    timed = measure.alternate(clients, query.path, args.repeat, 30.0,
                                              fill=args.fill)
                    a, b = timed["other"].p50, timed["this"].p50
                    ratios.append(b / a)
                    print(f"| {shape} | {query.label} | {a * 1000:.2f} | {b * 1000:.2f} "
                          f"| {b / a:.2f} |", flush=True)
    mean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeometric mean this/other over {len(ratios)} scenarios: {mean:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
