"""The client deadlines of allotment-api's worker, on a socket pair."""

from __future__ import annotations

import socket
import time

import pytest

from allotment.cmd.worker import DeadlineSocket


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def test_reads_within_the_deadline_get_the_data(pair) -> None:
    server, client = pair
    sock = DeadlineSocket(server, 1.0)
    client.sendall(b"GET / HTTP/1.1\r\n")
    assert sock.recv(100) == b"GET / HTTP/1.1\r\n"
    assert not sock.expired


def test_a_silent_client_reads_as_end_of_file_at_the_deadline(pair) -> None:
    server, _client = pair
    sock = DeadlineSocket(server, 0.3)
    started = time.monotonic()
    assert sock.recv(100) == b""
    assert 0.25 < time.monotonic() - started < 2
    assert sock.expired
    # And stays so, without waiting again.
    assert sock.recv(100) == b""


def test_a_trickle_does_not_extend_the_deadline(pair) -> None:
    server, client = pair
    sock = DeadlineSocket(server, 0.5)
    started = time.monotonic()
    received = b""
    while True:
        try:
            client.sendall(b"x")
        except OSError:
            break
        chunk = sock.recv(100)
        if not chunk:
            break
        received += chunk
        time.sleep(0.1)
    assert sock.expired
    assert time.monotonic() - started < 1.5
    assert 0 < len(received) < 10


def test_time_spent_by_the_application_does_not_count(pair) -> None:
    server, client = pair
    sock = DeadlineSocket(server, 0.3)
    client.sendall(b"request")
    assert sock.recv(100) == b"request"
    time.sleep(0.5)  # the application works past the read deadline
    sock.sendall(b"response")
    assert client.recv(100) == b"response"


def test_a_client_that_does_not_read_is_cut_off(pair) -> None:
    server, _client = pair
    sock = DeadlineSocket(server, 0.3)
    started = time.monotonic()
    with pytest.raises(BrokenPipeError):
        for _ in range(10_000):
            sock.sendall(b"x" * 65536)
    assert time.monotonic() - started < 2
    assert sock.expired
