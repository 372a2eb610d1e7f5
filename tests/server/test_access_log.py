"""allotment-api's access logger writes exactly the line gunicorn's would."""

from __future__ import annotations

import datetime
import logging
import subprocess
import sys
import time
import urllib.request

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from allotment.server.access_log import AccessLogger
from tests.harness.servers import free_port


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class _Response:
    def __init__(self, status: str, sent: int | None) -> None:
        self.status = status
        self.sent = sent
        self.headers = [("Content-Type", "application/json")]


class _Request:
    headers = [("HOST", "example"), ("USER-AGENT", "x")]


def _line(logger_class: type[Logger], environ: dict, resp: _Response) -> str:
    cfg = Config()
    cfg.set("accesslog", "-")
    logger = logger_class(cfg)
    capture = _Capture()
    logger.access_log.handlers = [capture]
    logger.access(resp, _Request(), environ, datetime.timedelta(microseconds=1500))
    return capture.lines[-1]


@pytest.mark.parametrize(("environ", "resp"), [
    ({"REQUEST_METHOD": "GET", "RAW_URI": "/resource_providers?name=a",
      "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
      "HTTP_USER_AGENT": "nova-scheduler"}, _Response("200 OK", 739)),
    ({"REQUEST_METHOD": "PUT", "RAW_URI": '/x"y', "SERVER_PROTOCOL": "HTTP/1.0",
      "HTTP_REFERER": 'a "quoted" referer', "HTTP_USER_AGENT": 'ua "1"',
      "HTTP_AUTHORIZATION": "Basic dXNlcjpwYXNz"}, _Response("409 Conflict", 0)),
    ({"REQUEST_METHOD": "DELETE", "RAW_URI": "/", "SERVER_PROTOCOL": "HTTP/1.1"},
     _Response("204 No Content", None)),
])
def test_same_line_as_gunicorn(environ, resp):
    # Both stamp the line with the current second; retry across a tick.
    for _ in range(3):
        ours, theirs = _line(AccessLogger, environ, resp), _line(Logger, environ, resp)
        if ours == theirs:
            return
        time.sleep(0.01)
    assert ours == theirs


def test_the_server_logs_requests(tmp_path):
    port = free_port()
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = sqlite:///{tmp_path}/db.sqlite\n"
                    "[api]\nauth_strategy = noauth2\n")
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "allotment.cmd.api", "--config-file", str(conf),
         "--bind", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(
                    urllib.request.Request(f"http://127.0.0.1:{port}/?probe=1",
                                           headers={"User-Agent": "probe"}), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for _ in range(50):
            text = (tmp_path / "server.log").read_text()
            if '"GET /?probe=1 HTTP/1.1" 200' in text:
                break
            time.sleep(0.1)
        assert '"GET /?probe=1 HTTP/1.1" 200' in text and '"-" "probe"' in text, text
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_plain_streams_are_written_directly_with_the_same_line(monkeypatch):
    import io

    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1"}
    resp = _Response("200 OK", 12)
    records: list = []
    for _ in range(3):
        monkeypatch.undo()
        expected = _line(Logger, environ, resp)
        # A record would be made only on the way through logging.
        monkeypatch.setattr(logging.Logger, "makeRecord",
                            lambda *a, **k: records.append(a))
        cfg = Config()
        cfg.set("accesslog", "-")
        logger = AccessLogger(cfg)
        stream = io.StringIO()
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(message)s"))  # as gunicorn sets it
        logger.access_log.handlers = [handler]
        logger.access(resp, _Request(), environ, datetime.timedelta(microseconds=1))
        if stream.getvalue() == expected + "\n":
            assert not records
            return
        time.sleep(0.01)
    assert stream.getvalue() == expected + "\n"


def test_other_handlers_still_get_log_records():
    import io

    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/", "SERVER_PROTOCOL": "HTTP/1.1"}
    cfg = Config()
    cfg.set("accesslog", "-")
    logger = AccessLogger(cfg)
    capture = _Capture()
    plain = logging.StreamHandler(io.StringIO())
    plain.setFormatter(logging.Formatter("%(message)s"))
    logger.access_log.handlers = [plain, capture]  # a plain stream and another kind
    logger.access(_Response("200 OK", 1), _Request(), environ, None)
    assert len(capture.lines) == 1 and '"GET / HTTP/1.1" 200 1' in capture.lines[0]
