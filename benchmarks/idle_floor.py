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
do not follow each other closely.  The first row is the machine's own floor:
the same client against a bare loop in a child process that accepts, reads,
answers a fixed 200 and closes (no HTTP server, no application).  Prints p50
milliseconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
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


_BARE_ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")


@contextlib.contextmanager
def _bare_server() -> Iterator[str]:
    """The URL of a child process answering every connection with one 200."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            while True:
                conn, _ = listener.accept()
                conn.recv(65536)
                conn.sendall(_BARE_ANSWER)
                conn.close()
        finally:
            os._exit(0)
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _row(client: Client, path: str, repeat: int) -> list[str]:
    cells = []
    for pause in PAUSES.values():
        samples = []
        for _ in range(repeat):
            pause()
            samples.append(client.request("GET", path)[2])
        cells.append(f"{statistics.median(samples) * 1000:.2f}")
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=101)
    args = parser.parse_args(argv)
    world = SHAPES["flat"](args.hosts)
    paths = {"GET /": "/"}
    paths.update({q.label: q.path for q in world.queries
                  if "in_tree" in q.label or "{uuid}" in q.label})
    print("| request (p50 ms) | " + " | ".join(PAUSES) + " |")
    print("|---|" + "---|" * len(PAUSES))
    with _bare_server() as url:
        cells = _row(Client(url), "/", args.repeat)
        print("| bare socket loop (no HTTP server) | " + " | ".join(cells) + " |")
    with tempfile.TemporaryDirectory(prefix="idle-floor.") as tmp:
        workdir = Path(tmp)
        with start_allotment(f"sqlite:///{workdir / 'a.sqlite'}", workdir / "a",
                             workers=2) as server:
            load(server.url, world, threads=1)
            client = Client(server.url)
            for label, path in paths.items():
                print(f"| {label} | " + " | ".join(_row(client, path, args.repeat)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
