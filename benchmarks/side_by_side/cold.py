"""A worker's cold start: from starting it to its first candidates answer.

A second server of one worker is started on a running configuration's
``placement.conf`` (the same database; upstream's schema check and the
benchmark's start-up sequence left out), and asked for candidates as soon
as it listens: everything between the process starting and that answer
(imports, loading the world, the first query) is what a restarted or
newly spawned worker costs before it serves.  Its resident memory right
after that answer is what a worker holds for the world at that size.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

from benchmarks.side_by_side.client import Client
from tests.harness import upstream
from tests.harness.servers import Server, _allotment_script, free_port

TIMEOUT = 600.0


@dataclass
class Cold:
    seconds: float  # process start to the first candidates answer
    rss_mb: float


def _command(server: Server, port: int) -> tuple[list[str], dict[str, str]]:
    bind = ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
    if server.name == "upstream":
        gunicorn = str(upstream.venv_path() / "bin" / "gunicorn")
        return ([gunicorn, *bind, "--timeout", "600", "placement.wsgi.api:application"],
                {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(server.workdir)})
    config = str(server.workdir / "placement.conf")
    return [_allotment_script(), "--config-file", config, *bind], dict(os.environ)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


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
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{server.name}: a cold worker exited; see {log.name}")
            try:
                status, body, _ = client.request("GET", path)
            except (ConnectionRefusedError, ConnectionResetError):
                if time.perf_counter() - start > TIMEOUT:
                    raise
                time.sleep(0.05)
                continue
            if status != 200:
                raise RuntimeError(f"{server.name}: cold answer {status}: {body[:300]!r}")
            seconds = time.perf_counter() - start
            workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                     text=True, check=False).stdout.split()
            return Cold(seconds, _rss_mb(int(workers[0])) if workers else 0.0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
