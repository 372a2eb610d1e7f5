"""A real multi-worker allotment-api server per backend, for the race tests.

The server is the console script, started as a subprocess with its own
placement.conf, so requests really are served by several processes sharing
one database.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from allotment.storage import db as db_mod
from tests.harness import backends
from tests.harness.backends import BACKENDS

WORKERS = 4
STARTUP_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _console_script() -> str:
    """allotment-api next to the running interpreter (the project's venv)."""
    candidate = Path(sys.executable).with_name("allotment-api")
    return str(candidate) if candidate.exists() else shutil.which("allotment-api")


@dataclass
class LiveServer:
    url: str
    database_url: str

    def headers(self, version: str = "latest", **extra: str) -> dict[str, str]:
        return {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}",
                **extra}

    def engine(self) -> sa.Engine:
        return sa.create_engine(db_mod.normalise_url(self.database_url))


@pytest.fixture(scope="module", params=BACKENDS)
def live_server(request, tmp_path_factory) -> LiveServer:
    workdir = tmp_path_factory.mktemp(f"live-{request.param}")
    database_url = backends.create_database(request.param, workdir, "allotment_live")

    config = workdir / "placement.conf"
    config.write_text(
        "[api]\nauth_strategy = noauth2\n\n"
        f"[placement_database]\nconnection = {database_url}\nsync_on_startup = true\n")
    port = _free_port()
    log = (workdir / "server.log").open("w")
    proc = subprocess.Popen(
        [_console_script(), "--config-file", str(config),
         "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS)],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"allotment-api exited: {(workdir / 'server.log').read_text()}")
            try:
                if requests.get(url + "/", timeout=5).status_code == 200:
                    break
            except requests.RequestException:  # not listening or still booting
                pass
            if time.monotonic() > deadline:
                pytest.fail("allotment-api did not start listening in time")
            time.sleep(0.2)
        yield LiveServer(url=url, database_url=database_url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        backends.drop_database(request.param, database_url)
