"""The access log of allotment-api: gunicorn's combined format, made cheaply.

gunicorn builds a dictionary of every request header, response header and
WSGI environment variable for each line, whatever the format uses; at the
request rates allotment answers that was a noticeable share of a small
request's time.  This logger writes the same line from the fields the
default format names.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from gunicorn.glogging import Logger


def _quoted(value: str) -> str:
    # As gunicorn does, so that a field cannot end the quotes around it.
    return value.replace('"', '\\"') if '"' in value else value


class AccessLogger(Logger):
    _second = -1
    _stamp = ""

    def now(self) -> str:
        # The stamp has a resolution of one second: format it once per second.
        second = int(time.time())
        if second != self._second:
            self._stamp = time.strftime("[%d/%b/%Y:%H:%M:%S %z]", time.localtime(second))
            self._second = second
        return self._stamp

    def access(self, resp: Any, req: Any, environ: dict, request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        sent = getattr(resp, "sent", None)
        request = _quoted(f"{environ['REQUEST_METHOD']} {environ['RAW_URI']} "
                          f"{environ['SERVER_PROTOCOL']}")
        line = (f"{environ.get('REMOTE_ADDR', '-')} - "
                f"{_quoted(self._get_user(environ) or '-')} {self.now()} "
                f'"{request}" {status} {sent if sent is not None else "-"} '
                f'"{_quoted(environ.get("HTTP_REFERER", "-"))}" '
                f'"{_quoted(environ.get("HTTP_USER_AGENT", "-"))}"')
        try:
            if not _write_plainly(self.access_log, line):
                self.access_log.info("%s", line)
        except Exception:  # pragma: no cover - as gunicorn's own logger
            self.exception("access log")


_PLAIN_HANDLERS = (logging.StreamHandler, logging.FileHandler)


def _write_plainly(log: logging.Logger, line: str) -> bool:
    """Write ``line`` straight to the log's streams, if that is all logging
    would do with it.

    gunicorn's access log is a stream (``-``) or a file with the format
    ``%(message)s``; for those a log record, its formatting and the handler
    chain only cost time (about 50 us a line, a sixth of a small request).
    Any other set-up (syslog, a logging configuration of the operator's,
    filters, levels) goes through logging as before.
    """
    handlers = log.handlers
    if not handlers or log.filters or not log.isEnabledFor(logging.INFO):
        return False
    for handler in handlers:
        if (type(handler) not in _PLAIN_HANDLERS or handler.filters
                or handler.level > logging.INFO or handler.stream is None
                or handler.formatter is None
                or handler.formatter._fmt != "%(message)s"):
            return False
    for handler in handlers:
        with handler.lock:
            handler.stream.write(line + handler.terminator)
            handler.stream.flush()
    return True
