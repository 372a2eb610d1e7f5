"""A worker's cold start: from starting it to its first candidates answer.

A second server of one worker is started on a running configuration's
``placement.conf`` (the same database; upstream's schema check and the
benchmark's start-up sequence left out), and asked for candidates as soon
as it listens: everything between the process starting and that answer
(imports, loading the world, the first query) is what a restarted or
newly spawned worker costs before it serves.  Its resident memory right
after that answer is what a worker holds for the world at that size.

Then that worker is killed, and the time from the kill to the first
candidates answer of the worker gunicorn starts in its place is what a
worker that exits (a crash, ``max_requests``, an out-of-memory kill) costs
before its replacement serves.  That worker's memory is read three ways:
resident (RSS, pages it shares with the server's main process included),
proportional (PSS, shared pages divided among their sharers) and unique
(USS, what it holds alone: what one more worker adds).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.measure import memory_mb
from tests.harness import upstream
from tests.harness.servers import Server, _allotment_script, free_port

TIMEOUT = 600.0


@dataclass
class Cold:
    seconds: float  # process start to the first candidates answer
    rss_mb: float
    # A worker started in place of one killed: kill to its first answer,
    # and its memory then.
    replaced_seconds: float | None = None
    replaced_mb: tuple[float, float, float] | None = None  # RSS, PSS, USS


def _command(server: Server, port: int) -> tuple[list[str], dict[str, str]]:
    bind = ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
    if server.name == "upstream":
        gunicorn = str(upstream.venv_path() / "bin" / "gunicorn")
        return ([gunicorn, *bind, "--timeout", "600", "placement.wsgi.api:application"],
                {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(server.workdir)})
    config = str(server.workdir / "placement.conf")
    return [_allotment_script(), "--config-file", config, *bind], dict(os.environ)


def _workers(proc: subprocess.Popen) -> list[int]:
    return [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                           text=True, check=False).stdout.split()]


def _first_answer(name: str, client: Client, path: str, proc: subprocess.Popen,
                  start: float, log) -> None:
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name}: a cold worker's server exited; see {log.name}")
        try:
            status, body, _ = client.request("GET", path)
        except (ConnectionRefusedError, ConnectionResetError):
            if time.perf_counter() - start > TIMEOUT:
                raise
            time.sleep(0.01)
            continue
        if status != 200:
            raise RuntimeError(f"{name}: cold answer {status}: {body[:300]!r}")
        return


def _replaced(name: str, client: Client, path: str, proc: subprocess.Popen, log,
              cold: Cold) -> None:
    """Kill the server's one worker; time its replacement's first answer."""
    (old,) = _workers(proc)
    start = time.perf_counter()
    os.kill(old, signal.SIGKILL)
    while True:
        found = _workers(proc)
        if found and found != [old]:
            break
        if time.perf_counter() - start > TIMEOUT:
            raise RuntimeError(f"{name}: no worker replaced the one killed; see {log.name}")
        time.sleep(0.005)
    _first_answer(name, client, path, proc, start, log)
    cold.replaced_seconds = time.perf_counter() - start
    cold.replaced_mb = memory_mb(found[0])


def cold_start(server: Server, path: str) -> Cold:
    """Start one more worker on ``server``'s configuration; time its first answer."""
    port = free_port()
    command, env = _command(server, port)
    log = (server.workdir / "cold.log").open("w")
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=server.workdir, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        client = Client(f"http://127.0.0.1:{port}", timeout=TIMEOUT)
        _first_answer(server.name, client, path, proc, start, log)
        seconds = time.perf_counter() - start
        workers = _workers(proc)
        found = Cold(seconds, memory_mb(workers[0])[0] if workers else 0.0)
        _replaced(server.name, client, path, proc, log, found)
        return found
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
