"""Start allotment or upstream Placement as real server processes.

Both are started the same way (a ``placement.conf`` in a scratch directory,
gunicorn with N workers, noauth2) so that anything comparing them compares
the services and not how they were run.  Upstream Placement comes from
:mod:`tests.harness.upstream`; it is never imported, only run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.harness import upstream

STARTUP_SECONDS = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A service listening on ``url`` until :meth:`stop`."""

    name: str
    url: str
    database_url: str
    workdir: Path
    proc: subprocess.Popen
    _log: object = field(repr=False, default=None)

    def headers(self, version: str = "latest", **extra: str) -> dict[str, str]:
        return {"X-Auth-Token": "admin",
                "OpenStack-API-Version": f"placement {version}", **extra}

    @property
    def pids(self) -> list[int]:
        """The gunicorn master and its workers."""
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)],
                             capture_output=True, text=True, check=False).stdout
        return [self.proc.pid, *(int(p) for p in out.split())]

    def log_text(self) -> str:
        path = self.workdir / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _conf_text(database_url: str, extra: str) -> str:
    return ("[DEFAULT]\ndebug = false\n\n[api]\nauth_strategy = noauth2\n\n"
            f"[placement_database]\nconnection = {database_url}\nsync_on_startup = true\n\n"
            + extra)


def _wait_listening(server: Server) -> Server:
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if server.proc.poll() is not None:
            log = server.log_text()
            server.stop()
            raise RuntimeError(f"{server.name} exited at start-up:\n{log[-4000:]}")
        try:
            if requests.get(server.url + "/", timeout=5).status_code == 200:
                return server
        except requests.RequestException:  # not listening yet
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"{server.name} did not start listening in time")
        time.sleep(0.2)


def _allotment_script() -> str:
    candidate = Path(sys.executable).with_name("allotment-api")
    return str(candidate) if candidate.exists() else shutil.which("allotment-api")


def start_allotment(database_url: str, workdir: Path, *, workers: int = 2,
                    extra_conf: str = "", env: dict[str, str] | None = None) -> Server:
    """``allotment-api`` on ``database_url`` (any URL allotment accepts)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "placement.conf"
    config.write_text(_conf_text(database_url, extra_conf))
    port = free_port()
    log = (workdir / "server.log").open("w")
    proc = subprocess.Popen(
        [_allotment_script(), "--config-file", str(config),
         "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})})
    return _wait_listening(Server("allotment", f"http://127.0.0.1:{port}",
                                  database_url, workdir, proc, log))


def upstream_url(database_url: str) -> str:
    """The same database as upstream's oslo.db wants it named (psycopg2)."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql+psycopg2://" + database_url[len(prefix):]
    return database_url


def start_upstream(database_url: str, workdir: Path, *, workers: int = 2,
                   extra_conf: str = "") -> Server:
    """Upstream Placement 16.0.0 under gunicorn on ``database_url``."""
    if workers > 1 and database_url.startswith("sqlite"):
        # Each of upstream's workers writes the standard traits and classes
        # when it boots; on a new SQLite file two of them at once fail with
        # "database is locked" and take the server down.  One worker first
        # writes them; later boots find them there.
        _start_upstream(database_url, workdir, workers=1, extra_conf=extra_conf).stop()
    return _start_upstream(database_url, workdir, workers=workers, extra_conf=extra_conf)


def _start_upstream(database_url: str, workdir: Path, *, workers: int,
                    extra_conf: str) -> Server:
    venv = upstream.ensure_venv()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "placement.conf").write_text(
        _conf_text(upstream_url(database_url), extra_conf))
    port = free_port()
    log = (workdir / "server.log").open("w")
    # With several workers each would migrate the schema at once; migrate
    # first, alone, as an operator would.
    subprocess.run([str(venv / "bin" / "placement-manage"), "--config-file",
                    str(workdir / "placement.conf"), "db", "sync"],
                   cwd=workdir, env={**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(workdir)},
                   stdout=log, stderr=subprocess.STDOUT, check=True)
    proc = subprocess.Popen(
        [str(venv / "bin" / "gunicorn"), "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--timeout", "300",
         "placement.wsgi.api:application"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(workdir)})
    return _wait_listening(Server("upstream", f"http://127.0.0.1:{port}",
                                  database_url, workdir, proc, log))


def upstream_manage(database_url: str, workdir: Path, *args: str,
                    check: bool = True) -> subprocess.CompletedProcess:
    """Upstream's ``placement-manage`` on ``database_url`` (e.g. ``db sync``)."""
    venv = upstream.ensure_venv()
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "placement.conf"
    config.write_text(_conf_text(upstream_url(database_url), ""))
    return subprocess.run(
        [str(venv / "bin" / "placement-manage"), "--config-file", str(config), *args],
        cwd=workdir, env={**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(workdir)},
        capture_output=True, text=True, check=check)
