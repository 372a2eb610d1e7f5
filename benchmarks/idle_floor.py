"""What a pause between requests costs a small answer on this machine.

Run: ``.venv/bin/python -m benchmarks.idle_floor [--hosts 1000]``

The side-by-side benchmark asks each service in turn, so between two
requests to allotment the machine spends upstream's time (16-25 ms for a
small answer) on something else.  This measures the same small requests to
allotment alone (gunicorn, 2 workers, a flat world loaded through the API),
asked back to back and then with 15 ms between them spent three ways:
sleeping, spinning on the client's CPU, and writing over 32 MB of memory.
The difference is what waking the worker and the client again costs (and
what cold caches cost), which every request of a service pays when requests
do not follow each other closely.  Prints p50 milliseconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.side_by_side.client import Client, load
from benchmarks.side_by_side.worlds import SHAPES
from tests.harness.servers import start_allotment

PAUSE = 0.015


def _sleep() -> None:
    time.sleep(PAUSE)


def _spin() -> None:
    until = time.perf_counter() + PAUSE
    while time.perf_counter() < until:
        pass


_MEMORY = bytearray(32 * 1024 * 1024)


def _thrash() -> None:
    until = time.perf_counter() + PAUSE
    while time.perf_counter() < until:
        for i in range(0, len(_MEMORY), 4096):
            _MEMORY[i] = (_MEMORY[i] + 1) & 255


PAUSES: dict[str, Callable[[], None]] = {
    "back to back": lambda: None, "sleep 15 ms": _sleep, "spin 15 ms": _spin,
    "write 32 MB for 15 ms": _thrash}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=101)
    args = parser.parse_args(argv)
    world = SHAPES["flat"](args.hosts)
    paths = {"GET /": "/"}
    paths.update({q.label: q.path for q in world.queries
                  if "in_tree" in q.label or "{uuid}" in q.label})
    with tempfile.TemporaryDirectory(prefix="idle-floor.") as tmp:
        workdir = Path(tmp)
        with start_allotment(f"sqlite:///{workdir / 'a.sqlite'}", workdir / "a",
                             workers=2) as server:
            load(server.url, world, threads=1)
            client = Client(server.url)
            print("| request (p50 ms) | " + " | ".join(PAUSES) + " |")
            print("|---|" + "---|" * len(PAUSES))
            for label, path in paths.items():
                cells = []
                for pause in PAUSES.values():
                    samples = []
                    for _ in range(args.repeat):
                        pause()
                        samples.append(client.request("GET", path)[2])
                    cells.append(f"{statistics.median(samples) * 1000:.2f}")
                print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
