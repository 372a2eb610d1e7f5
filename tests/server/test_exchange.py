"""allotment-api's short path for plain requests (allotment/server/exchange.py).

A plain request must reach the application exactly as gunicorn would hand it
over, and anything else must reach gunicorn byte for byte.  The first half
compares the two on the same bytes; the second drives a real server.
"""

from __future__ import annotations

import io
import json
import os
import socket
from urllib.parse import urlsplit

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from allotment.server import exchange
from allotment.server.worker import DeadlineSocket
from tests.harness.servers import start_allotment

SERVER = ("127.0.0.1", 8778)
CLIENT = ("127.0.0.1", 50123)


def _cfg() -> Config:
    cfg = Config()
    cfg.set("limit_request_line", 8190)
    cfg.set("forwarder_headers", "")
    cfg.set("workers", 2)
    return cfg


def _ours(raw: bytes) -> tuple[exchange.Request | None, DeadlineSocket, socket.socket]:
    server, client = socket.socketpair()
    client.sendall(raw)
    client.shutdown(socket.SHUT_WR)
    sock = DeadlineSocket(server, 5.0)
    return exchange.read_plain(sock, exchange.Limits(_cfg())), sock, client


def _gunicorn_environ(raw: bytes) -> dict:
    cfg = _cfg()
    req = next(RequestParser(cfg, iter([raw]), CLIENT))
    _resp, environ = wsgi.create(req, None, CLIENT, SERVER, cfg)
    return environ


# Keys whose values are objects made per request (compared by behaviour).
_OBJECTS = {"wsgi.input", "wsgi.errors", "gunicorn.socket", "wsgi.early_hints"}

PLAIN = [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /resource_providers?name=a%20b&in_tree=x HTTP/1.1\r\nHost: x:99\r\n"
    b"X-Auth-Token: admin\r\nOpenStack-API-Version: placement 1.39\r\n"
    b"Accept: application/json\r\nUser-Agent: nova\r\n\r\n",
    b"GET /resource_providers/%41b%2Fc HTTP/1.0\r\n\r\n",
    b"PUT /resource_providers/u/inventories HTTP/1.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 17\r\nX-Auth-Token: a\r\n\r\n{\"inventories\":1}",
    # A repeated header is joined with commas, as gunicorn does.
    b"GET /x HTTP/1.1\r\nAccept: a/b\r\naccept: c/d\r\nX-Y: 1\r\n\r\n",
    b"DELETE /allocations/c HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    b"GET /traits?name=in:A,B HTTP/1.1\r\nX-OpenStack-Request-ID: req-1\r\n\r\n",
]


@pytest.mark.parametrize("raw", PLAIN)
def test_plain_requests_get_gunicorns_environ(raw: bytes) -> None:
    request, sock, client = _ours(raw)
    try:
        assert request is not None
        ours = exchange.Environ(_cfg(), SERVER).build(request, sock, CLIENT)
        theirs = _gunicorn_environ(raw)
        assert {k: v for k, v in ours.items() if k not in _OBJECTS} == {
            k: v for k, v in theirs.items() if k not in _OBJECTS}
        assert ours["wsgi.input"].read() == theirs["wsgi.input"].read()
    finally:
        client.close()


def test_the_body_is_read_from_the_socket_past_the_first_read() -> None:
    body = json.dumps({"name": "n" * 200_000}).encode()
    raw = (b"POST /resource_providers HTTP/1.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n" % len(body))
    server, client = socket.socketpair()
    try:
        client.sendall(raw + body[:1000])
        sock = DeadlineSocket(server, 5.0)
        request = exchange.read_plain(sock, exchange.Limits(_cfg()))
        assert request is not None
        environ = exchange.Environ(_cfg(), SERVER).build(request, sock, CLIENT)
        client.sendall(body[1000:])
        assert environ["wsgi.input"].read() == body
    finally:
        server.close()
        client.close()


OTHERS = [
    b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /x HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n",
    b"GET /x HTTP/1.1\r\nX_Auth_Token: admin\r\n\r\n",
    b"GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    b"GET /x HTTP/1.1\r\nContent-Length: +1\r\n\r\nx",
    b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET http://example.org/x HTTP/1.1\r\n\r\n",
    b"GET //x HTTP/1.1\r\n\r\n",
    b"GET /x#frag HTTP/1.1\r\n\r\n",
    b"\r\nGET /x HTTP/1.1\r\n\r\n",
    b"GET /x HTTP/2.0\r\n\r\n",
    b"get /x HTTP/1.1\r\n\r\n",
    b"GET /" + b"x" * 9000 + b" HTTP/1.1\r\n\r\n",
    b"GET /x HTTP/1.1\r\nX-Big: " + b"x" * 9000 + b"\r\n\r\n",
    b"GET /x HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(120)) + b"\r\n",
    b"GET /x HTTP/1.1\r\nBad Header: 1\r\n\r\n",
    b"GET /x HTTP/1.1\r\nHost: x\r\n",  # never finished
]


@pytest.mark.parametrize("raw", OTHERS)
def test_other_requests_go_to_gunicorn_with_every_byte(raw: bytes) -> None:
    request, sock, client = _ours(raw)
    try:
        assert request is None
        # gunicorn's reader sees the request from its first byte.
        seen = b""
        while chunk := sock.recv(8192):
            seen += chunk
        assert seen == raw
    finally:
        client.close()


def test_a_client_that_sends_nothing_is_none() -> None:
    request, _sock, client = _ours(b"")
    client.close()
    assert request is None


def test_response_head_and_body_in_one_write() -> None:
    response = exchange.Response()
    write = response.start_response("200 OK", [("Content-Type", "application/json"),
                                               ("Content-Length", "2")])
    assert callable(write)
    sent = io.BytesIO()

    class Sock:
        def sendall(self, data: bytes) -> None:
            sent.write(data + b"|")

    request = exchange.Request("GET", "/", "/", "", "HTTP/1.1", [], b"")
    exchange.send(Sock(), request, response, [b"{}"])
    head, _, rest = sent.getvalue().partition(b"\r\n\r\n")
    assert rest == b"{}|"  # one write
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    assert "Connection: close" in lines and "Content-Length: 2" in lines
    assert response.sent == 2 and response.committed


@pytest.mark.parametrize(("method", "status"), [("HEAD", "200 OK"),
                                               ("GET", "204 No Content"),
                                               ("GET", "304 Not Modified")])
def test_no_body_where_http_has_none(method: str, status: str) -> None:
    response = exchange.Response()
    response.start_response(status, [("Content-Length", "2")])
    out = []

    class Sock:
        def sendall(self, data: bytes) -> None:
            out.append(data)

    exchange.send(Sock(), exchange.Request(method, "/", "/", "", "HTTP/1.1", [], b""),
                  response, [b"{}"])
    assert b"".join(out).endswith(b"\r\n\r\n") and response.sent == 0


def test_the_legacy_write_callable_is_sent_before_the_body() -> None:
    response = exchange.Response()
    write = response.start_response("200 OK", [])
    write(b"ab")
    out = []

    class Sock:
        def sendall(self, data: bytes) -> None:
            out.append(data)

    exchange.send(Sock(), exchange.Request("GET", "/", "/", "", "HTTP/1.1", [], b""),
                  response, [b"cd"])
    assert b"".join(out).endswith(b"\r\n\r\nabcd") and response.sent == 4


@pytest.mark.parametrize("header", [("X-A", "a\r\nX-B: b"), ("X-A\n", "a")])
def test_response_headers_cannot_split_the_response(header) -> None:
    with pytest.raises(ValueError):
        exchange.Response().start_response("200 OK", [header])


# -- a real server ---------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("exchange")
    srv = start_allotment(f"sqlite:///{workdir / 'a.sqlite'}", workdir, workers=1)
    yield srv
    srv.stop()
    log = srv.log_text()
    assert "Traceback" not in log, log[-3000:]


def _raw(server, data: bytes) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 100 "):
        # An interim answer to Expect: 100-continue; the answer follows.
        head, _, body = body.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def _post(name: str, *, chunked: bool = False, expect: bool = False,
          trailing: bytes = b"") -> bytes:
    body = json.dumps({"name": name}).encode()
    head = ("POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n"
            "OpenStack-API-Version: placement 1.20\r\nContent-Type: application/json\r\n")
    if expect:
        head += "Expect: 100-continue\r\n"
    if chunked:
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + (
            b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body + trailing


@pytest.mark.parametrize(("name", "kind"), [("plain", {}), ("chunked", {"chunked": True}),
                                            ("expect", {"expect": True})])
def test_writes_are_answered_alike_on_both_paths(server, name, kind) -> None:
    status, _, body = _raw(server, _post(f"rp-{name}", **kind))
    assert status == 200, body
    assert json.loads(body)["name"] == f"rp-{name}"
    status, _, body = _raw(server, b"GET /resource_providers?name=rp-%s HTTP/1.1\r\n"
                                   b"X-Auth-Token: admin\r\n\r\n" % name.encode())
    assert status == 200 and len(json.loads(body)["resource_providers"]) == 1


def test_plain_answers_carry_the_usual_headers(server) -> None:
    status, headers, body = _raw(server, b"GET / HTTP/1.1\r\nHost: x\r\n"
                                         b"X-Auth-Token: admin\r\n\r\n")
    assert status == 200
    assert headers["connection"] == "close"
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert headers["x-openstack-request-id"].startswith("req-")
    assert "date" in headers


def test_bytes_after_the_request_do_not_cut_the_answer(server) -> None:
    # A second request sent at once is not answered, but neither does it
    # reset the connection before the first answer is read.
    status, _, body = _raw(server, _post("rp-pipelined",
                                         trailing=b"GET / HTTP/1.1\r\n\r\n" * 50))
    assert status == 200 and json.loads(body)["name"] == "rp-pipelined"


def test_head_has_no_body(server) -> None:
    # Placement serves no HEAD: the 405 names its JSON body's length, but
    # a response to HEAD carries none.
    status, headers, body = _raw(server, b"HEAD /resource_providers HTTP/1.1\r\n"
                                         b"X-Auth-Token: admin\r\n\r\n")
    assert status == 405 and int(headers["content-length"]) > 0 and body == b""


@pytest.mark.parametrize("raw", [
    b"GET /x HTTP/1.1\r\nBad Header: 1\r\n\r\n",
    b"GET /usages HTTP/1.1\r\nX-Auth-Token: admin\r\nContent-Length: 1x\r\n\r\n",
    b"GET /usages HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"G\x01T / HTTP/1.1\r\n\r\n",
], ids=["header name", "content-length", "negative length", "version", "method"])
def test_malformed_requests_get_a_400_in_placement_shape(server, raw) -> None:
    status, headers, body = _raw(server, raw)
    assert status == 400, body
    assert headers["content-type"] == "application/json"
    [error] = json.loads(body)["errors"]
    assert error["status"] == 400 and error["title"] == "Bad Request"
    assert "The request could not be read" in error["detail"]


def test_malformed_requests_still_get_4xx(server) -> None:
    status, _, _ = _raw(server, b"GET / HTTP/1.1\r\nX-Auth-Token: admin\r\n\r\n")
    assert status == 200


# -- the worker's handling of one connection ------------------------------

class _Log:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.lines: list[tuple[str, int]] = []

    def access(self, resp, req, environ, request_time) -> None:
        self.lines.append((resp.status, resp.sent))

    def exception(self, msg, *args) -> None:
        self.errors.append(msg % args)

    def debug(self, *args) -> None:
        pass

    info = warning = debug


def _worker(app):
    from allotment.server.worker import DeadlineSyncWorker

    worker = DeadlineSyncWorker.__new__(DeadlineSyncWorker)
    worker.cfg, worker.wsgi, worker.log = _cfg(), app, _Log()
    worker.nr, worker.max_requests, worker.alive = 0, 1000, True
    return worker


def _handled(app, raw: bytes) -> tuple[bytes, object]:
    worker = _worker(app)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname(), timeout=10) as client:
            client.sendall(raw)
            # Done sending: gunicorn's lingering close sees the end at once.
            client.shutdown(socket.SHUT_WR)
            conn, addr = listener.accept()
            worker.handle(listener, conn, addr)
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
    return answer, worker


def test_a_plain_request_is_served_without_gunicorns_request_objects() -> None:
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    answer, worker = _handled(app, b"GET /a?b=c HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok")
    assert seen["PATH_INFO"] == "/a" and seen["QUERY_STRING"] == "b=c"
    # gunicorn's own path offers early hints; the short path does not.
    assert "wsgi.early_hints" not in seen
    assert worker.log.lines == [("200 OK", 2)] and worker.nr == 1

    answer, _ = _handled(app, b"GET /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 100 Continue") and "wsgi.early_hints" in seen


def test_an_application_error_is_a_500_in_placement_shape() -> None:
    def app(environ, start_response):
        raise RuntimeError("boom")

    answer, worker = _handled(app, b"GET / HTTP/1.1\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 500 ")
    assert json.loads(body)["errors"][0]["status"] == 500
    assert worker.log.errors and worker.log.lines[0][0].startswith("500")


def test_a_generator_application_starts_its_response_late() -> None:
    def app(environ, start_response):
        start_response("201 Created", [("Content-Type", "text/plain")])
        yield b"a"
        yield b"b"

    answer, worker = _handled(app, b"GET / HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 201 Created") and answer.endswith(b"\r\n\r\nab")
    assert worker.log.lines == [("201 Created", 2)]


def test_a_client_gone_when_the_answer_is_closed_does_not_stop_the_worker() -> None:
    class _Answer(list):
        def close(self) -> None:
            raise ConnectionResetError(104, "Connection reset by peer")

    def app(environ, start_response):
        start_response("200 OK", [("Content-Length", "2")])
        return _Answer([b"ok"])

    answer, worker = _handled(app, b"GET / HTTP/1.1\r\n\r\n")
    assert answer.endswith(b"\r\n\r\nok")
    # Nothing raised out of handle(), and a reset client is not an error.
    assert worker.log.errors == [] and worker.nr == 1


def test_the_access_line_is_written_once_the_connection_is_closed() -> None:
    # A client that reads to the end of the connection has its answer
    # without waiting for the log.
    closed_when_logged = []

    def app(environ, start_response):
        sock = environ["gunicorn.socket"]

        class _Watch(_Log):
            def access(self, resp, req, environ, request_time) -> None:
                closed_when_logged.append(sock.fileno() == -1)
                super().access(resp, req, environ, request_time)

        worker.log = _Watch()
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    worker = _worker(app)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname(), timeout=10) as client:
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")
            client.shutdown(socket.SHUT_WR)
            conn, addr = listener.accept()
            worker.handle(listener, conn, addr)
    assert closed_when_logged == [True]
    assert worker.log.lines == [("200 OK", 2)]


def test_an_accepted_connection_is_blocking_and_not_inherited() -> None:
    # What gunicorn's accept() made sure of with three system calls, which
    # the worker's own accept() leaves to Python and Linux.
    worker = _worker(None)
    taken = []
    worker.handle = lambda listener, client, addr: taken.append(client)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)  # as gunicorn's listeners are
        with socket.create_connection(listener.getsockname(), timeout=10):
            worker.accept(listener)
            client = taken[0]
            assert client.gettimeout() is None and client.getblocking()
            assert not client.get_inheritable()
            assert os.get_blocking(client.fileno())
            client.close()
