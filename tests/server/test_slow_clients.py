"""allotment-api on a real socket against slow and oversized clients.

One worker, so a client that could hold it would stall every other client:
each test checks that a well-behaved request is answered promptly while the
hostile client is (or was) connected, and that the server logs no error.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests

from tests.harness.servers import start_allotment

CLIENT_TIMEOUT = 2
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slow-clients")
    db_url = f"sqlite:///{workdir / 'allotment.sqlite'}"
    srv = start_allotment(db_url, workdir, workers=1,
                          extra_conf=f"[allotment]\nclient_timeout = {CLIENT_TIMEOUT}\n")
    yield srv
    srv.stop()
    log = srv.log_text()
    assert "Traceback" not in log, log[-3000:]
    assert '" 500 ' not in log, log[-3000:]


def connect(server) -> socket.socket:
    parts = urlsplit(server.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def served_promptly(server) -> float:
    started = time.monotonic()
    resp = requests.get(server.url + "/resource_providers", headers=HEADERS, timeout=30)
    assert resp.status_code == 200
    return time.monotonic() - started


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except (TimeoutError, ConnectionResetError):
        return False
    finally:
        sock.close()


def test_a_silent_connection_cannot_hold_the_worker(server) -> None:
    silent = connect(server)
    time.sleep(0.2)
    # Answered once the silent client's deadline has passed, not after
    # gunicorn's 120 s worker timeout.
    assert served_promptly(server) < CLIENT_TIMEOUT + 3
    assert closed_within(silent, CLIENT_TIMEOUT + 3)


def test_a_trickling_request_line_is_cut_off(server) -> None:
    slow = connect(server)
    started = time.monotonic()
    request = b"GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n\r\n"
    cut_off = False
    for byte in request:
        try:
            slow.sendall(bytes([byte]))
        except OSError:
            cut_off = True
            break
        time.sleep(0.25)
        if time.monotonic() - started > CLIENT_TIMEOUT + 3:
            break
    assert cut_off or closed_within(slow, 3)
    assert time.monotonic() - started < CLIENT_TIMEOUT + 4
    assert served_promptly(server) < 3


def test_a_trickling_body_is_cut_off_and_writes_nothing(server) -> None:
    slow = connect(server)
    body = json.dumps({"name": "slow-body"}).encode()
    head = ("POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n"
            "OpenStack-API-Version: placement latest\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) + 100}\r\n\r\n").encode()
    slow.sendall(head + body[:5])
    started = time.monotonic()
    assert served_promptly(server) < CLIENT_TIMEOUT + 3
    assert closed_within(slow, 3)
    assert time.monotonic() - started < CLIENT_TIMEOUT + 4
    names = [rp["name"] for rp in requests.get(
        server.url + "/resource_providers", headers=HEADERS, timeout=10).json()[
        "resource_providers"]]
    assert "slow-body" not in names


def test_long_query_strings_are_served_up_to_the_limit(server) -> None:
    # Past gunicorn's default request line (4094 bytes), within ours.
    query = "name=" + "x" * 6000
    resp = requests.get(f"{server.url}/resource_providers?{query}", headers=HEADERS,
                        timeout=10)
    assert resp.status_code == 200


# Lines small enough for the socket buffers: the whole request is sent
# before the server answers and closes.
@pytest.mark.parametrize("length", [8190, 8300, 20000])
def test_overlong_request_lines_are_414_in_placement_shape(server, length) -> None:
    query = "name=" + "x" * length
    resp = requests.get(f"{server.url}/resource_providers?{query}", headers=HEADERS,
                        timeout=10)
    assert resp.status_code == 414
    error = resp.json()["errors"][0]
    assert error["status"] == 414
    assert error["title"] == "Request-URI Too Long"
    assert served_promptly(server) < 3



@pytest.mark.parametrize("headers", [
    {"X-Big": "x" * 10000},                              # one header too large
    {f"X-Many-{i}": "x" for i in range(150)},            # too many headers
])
def test_oversized_headers_are_4xx(server, headers) -> None:
    resp = requests.get(f"{server.url}/resource_providers", headers={**HEADERS, **headers},
                        timeout=10)
    assert 400 <= resp.status_code < 500
    assert served_promptly(server) < 3
