"""The client deadlines of allotment-api's worker, on a socket pair."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from allotment.server.worker import DeadlineSocket


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


def test_a_request_already_there_is_read_without_a_timeout(pair) -> None:
    # The common case takes the data without switching the socket to
    # timeout mode (a mode change and a poll() per call).
    server, client = pair
    sock = DeadlineSocket(server, 1.0)
    client.sendall(b"GET / HTTP/1.1\r\n\r\n")
    assert sock.recv(100) == b"GET / HTTP/1.1\r\n\r\n"
    assert server.gettimeout() is None
    sock.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
    assert server.gettimeout() is None
    assert client.recv(100) == b"HTTP/1.1 200 OK\r\n\r\n"


def test_a_request_not_there_yet_waits_with_the_deadline(pair) -> None:
    server, client = pair
    sock = DeadlineSocket(server, 2.0)
    threading.Timer(0.2, client.sendall, (b"late",)).start()
    assert sock.recv(100) == b"late"
    assert server.gettimeout() is not None and not sock.expired


def test_a_response_larger_than_the_buffer_arrives_whole(pair) -> None:
    # The first send takes what fits; the rest goes the timed way, in order.
    server, client = pair
    sock = DeadlineSocket(server, 5.0)
    data = bytes(range(256)) * 40_000  # 10 MB: more than a socket buffer
    received = bytearray()

    def read() -> None:
        while len(received) < len(data):
            chunk = client.recv(1 << 20)
            if not chunk:
                break
            received.extend(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    sock.sendall(data)
    reader.join(10)
    assert bytes(received) == data
    assert not sock.expired


def test_the_deadline_holds_while_data_keeps_arriving(pair) -> None:
    # Reads that find data at once still count against the read deadline.
    server, client = pair
    sock = DeadlineSocket(server, 0.3)
    client.sendall(b"x" * 1000)
    assert sock.recv(1) == b"x"
    time.sleep(0.4)
    assert sock.recv(1) == b""
    assert sock.expired
