"""Fixtures running the same client tests over every transport.

``placement`` is a :class:`PlacementClient` speaking either HTTP to a real
``allotment-api`` process or directly to an in-process application
(PlacementDirect); both use the session's test database, cleaned before
each test by the shared ``db`` fixture.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from allotment.client import PlacementClient
from allotment.server.in_process import PlacementDirect
from tests.conftest import make_conf

BIN = Path(sys.executable).parent
TRANSPORTS = ["http", "direct"]
# noauth2 roles of a nova-compute-like caller: reshaping needs "service".
SERVICE_ROLES = {"X-Roles": "admin,service"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_serving(url: str, proc: subprocess.Popen, log: Path,
                        timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"allotment-api exited: {log.read_text()[-3000:]}")
        try:
            requests.get(url + "/", timeout=5)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise AssertionError("allotment-api did not start")


@pytest.fixture(scope="session")
def live_server(database, database_url, tmp_path_factory) -> str:
    """URL of an ``allotment-api`` process (two workers) on the test database."""
    workdir = tmp_path_factory.mktemp("server")
    conf_file = workdir / "placement.conf"
    conf_file.write_text(
        "[api]\nauth_strategy = noauth2\n"
        f"[placement_database]\nconnection = {database_url}\n")
    log = workdir / "server.log"
    port = free_port()
    with log.open("w") as log_fh:
        proc = subprocess.Popen(
            [str(BIN / "allotment-api"), "--config-file", str(conf_file),
             "--bind", f"127.0.0.1:{port}", "--workers", "2"],
            stdout=subprocess.DEVNULL, stderr=log_fh)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, proc, log)
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="session")
def direct_context(database, database_url):
    """One in-process application for the session (building it migrates and
    syncs the standard names, which is worth doing once)."""
    with PlacementDirect(make_conf(database_url)) as client:
        yield client


@pytest.fixture(params=TRANSPORTS)
def transport_kind(request) -> str:
    return request.param


@pytest.fixture
def connect(transport_kind, request, db):
    """``connect(microversion=...)``: a fresh client on this test's transport."""
    clients: list[PlacementClient] = []

    def make(**kwargs) -> PlacementClient:
        if transport_kind == "http":
            url = request.getfixturevalue("live_server")
            client = PlacementClient.from_url(url, token="admin", headers=SERVICE_ROLES,
                                              **kwargs)
        else:
            direct = request.getfixturevalue("direct_context")
            client = PlacementClient(direct.transport, headers=SERVICE_ROLES, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def placement(connect) -> PlacementClient:
    """A client at the latest microversion, as admin and service, on each transport."""
    return connect()
