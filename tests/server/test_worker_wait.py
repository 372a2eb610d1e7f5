"""How allotment-api's workers wait for connections.

Idle workers wait with EPOLLEXCLUSIVE, so one worker wakes per connection
instead of all of them.  These tests check that the wait still answers what
gunicorn's loop needs from it, and that with several workers a connection
is taken by an idle worker while another is busy.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests

from allotment.server.worker import DeadlineSyncWorker
from tests.harness.servers import start_allotment

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}

pytestmark = pytest.mark.skipif(not hasattr(select, "EPOLLEXCLUSIVE"),
                                reason="EPOLLEXCLUSIVE is Linux's")


class _Waiter(DeadlineSyncWorker):
    """Only what wait() touches of a worker."""

    def __init__(self, listener: socket.socket) -> None:
        self.sockets = [listener]
        self.PIPE = os.pipe()
        self.nr = 0
        self.notified = 0

    def notify(self) -> None:
        self.notified += 1


@pytest.fixture
def waiter():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    worker = _Waiter(listener)
    yield worker
    listener.close()
    for fd in worker.PIPE:
        os.close(fd)


def test_wait_times_out_with_nothing_ready(waiter):
    started = time.monotonic()
    assert waiter.wait(0.2) == []
    assert 0.15 <= time.monotonic() - started < 5
    assert waiter.notified == 1


def test_wait_reports_a_pending_connection(waiter):
    client = socket.create_connection(waiter.sockets[0].getsockname())
    try:
        assert waiter.wait(5) == [waiter.sockets[0]]
        conn, _ = waiter.sockets[0].accept()
        conn.close()
    finally:
        client.close()


def test_wait_wakes_for_the_arbiter_and_drains_its_pipe(waiter):
    os.write(waiter.PIPE[1], b".")
    assert waiter.wait(5) == [waiter.PIPE[0]]
    # Drained: the next wait sleeps until its timeout.
    assert waiter.wait(0.1) == []


def test_an_idle_worker_takes_the_connection_a_busy_one_cannot(tmp_path):
    # A client that connects and says nothing holds one worker until its
    # deadline; the other worker must be the one woken for the next client.
    server = start_allotment(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path, workers=2,
                             extra_conf="[allotment]\nclient_timeout = 20\n")
    try:
        parts = urlsplit(server.url)
        for _ in range(3):
            silent = socket.create_connection((parts.hostname, parts.port), timeout=30)
            try:
                time.sleep(0.2)
                started = time.monotonic()
                resp = requests.get(server.url + "/resource_providers", headers=HEADERS,
                                    timeout=30)
                assert resp.status_code == 200
                assert time.monotonic() - started < 5
            finally:
                silent.close()
    finally:
        server.stop()


def test_the_heartbeat_is_sent_at_most_once_a_second(monkeypatch):
    from gunicorn.workers.base import Worker

    beats = []
    # Each beat at the moment the worker decided to send it.
    monkeypatch.setattr(Worker, "notify", lambda self: beats.append(self._notified))
    worker = DeadlineSyncWorker.__new__(DeadlineSyncWorker)
    monkeypatch.setattr(DeadlineSyncWorker, "HEARTBEAT_INTERVAL", 0.2)
    started = time.monotonic()
    while time.monotonic() - started < 0.5:
        worker.notify()
    # The first call beats at once, then one per interval, never more.
    assert 2 <= len(beats) <= 3
    assert all(b - a >= 0.2 for a, b in itertools.pairwise(beats))
