"""One request and its response on one connection, the short way.

gunicorn's sync worker spends about 0.2 ms of Python on every request before
and after the application runs (request and header objects, a policy pass
per header, a response object, a lingering close).  Placement's clients
send plain requests -- a request line, a dozen headers, perhaps a JSON body
with a Content-Length -- and for those this module does the same work
directly: the header block is parsed by gunicorn's own C parser
(``gunicorn_h1c``, with gunicorn's limits), the WSGI environment is built
as gunicorn builds it, and the response goes out in one write.

Anything out of the ordinary is left to gunicorn: :func:`read_plain`
answers ``None`` and the bytes already read are handed back to the socket,
so gunicorn's parser sees the request exactly as sent and answers it (or
refuses it) as it always has.  That covers parse errors and limits, chunked
or otherwise encoded bodies, ``Expect``, the headers gunicorn gives a
meaning (forwarded scheme, names with underscores), and repeated framing
headers.
"""

from __future__ import annotations

import itertools
import socket
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

import gunicorn_h1c
from gunicorn import SERVER_SOFTWARE
from gunicorn.http.body import Body, LengthReader
from gunicorn.http.unreader import SocketUnreader
from gunicorn.http.wsgi import FileWrapper, WSGIErrorsWrapper

from allotment.api import rendering
from allotment.errors import PlacementError

#: Headers whose meaning gunicorn implements itself (framing, expectations,
#: the scheme a trusted proxy forwards); their requests take gunicorn's path.
_GUNICORN_HEADERS = frozenset((b"transfer-encoding", b"expect"))
#: Headers a request may carry once at most.
_SINGLE = {"CONTENT-LENGTH", "CONTENT-TYPE", "HOST"}
#: Statuses whose responses never carry a body.
_BODILESS = ("1", "204", "304")
_HEADER_BUFFER = 65536
#: The flag that makes one socket call not wait (0 where there is none).
#: Plain ints: ``|`` on the socket module's flag enums builds an enum
#: member every time, on every request.
DONTWAIT = int(getattr(socket, "MSG_DONTWAIT", 0))
#: A look at what the client sent next, without waiting.
PEEK_NOW = int(socket.MSG_PEEK) | DONTWAIT


class Request:
    """A parsed plain request: the method, target and headers as gunicorn
    hands them to its WSGI layer, and the bytes read past the headers."""

    __slots__ = ("headers", "method", "path", "query", "rest", "uri", "version")

    def __init__(self, method: str, uri: str, path: str, query: str, version: str,
                 headers: list[tuple[str, str]], rest: bytes) -> None:
        self.method, self.uri, self.path, self.query = method, uri, path, query
        self.version, self.headers, self.rest = version, headers, rest


class Limits:
    """gunicorn's request limits and header policy, read once per worker."""

    def __init__(self, cfg: Any) -> None:
        self.line = cfg.limit_request_line or 2 ** 31 - 1
        self.fields = cfg.limit_request_fields
        self.field_size = cfg.limit_request_field_size
        self.buffer = min(_HEADER_BUFFER + self.line, 2 ** 20)
        self.unconventional_method = cfg.permit_unconventional_http_method
        self.unconventional_version = cfg.permit_unconventional_http_version
        self.casefold_method = cfg.casefold_http_method
        self.gunicorn_headers = _GUNICORN_HEADERS | {
            name.lower().encode("latin-1") for name in cfg.secure_scheme_headers}


def read_plain(sock: Any, limits: Limits) -> Request | None:
    """Read and parse a plain request from ``sock``; ``None`` for any other.

    ``None`` means: hand every byte read so far back to the socket (see
    :meth:`allotment.server.worker.DeadlineSocket.unread`) and let gunicorn
    take the request.  An empty read (a client that left) is also ``None``.
    """
    data = sock.recv(_HEADER_BUFFER)
    last = 0
    while True:
        if not data:
            return None
        try:
            parsed = gunicorn_h1c.parse_request(
                data, last_len=last, limit_request_line=limits.line,
                limit_request_fields=limits.fields,
                limit_request_field_size=limits.field_size,
                permit_unconventional_http_method=limits.unconventional_method,
                permit_unconventional_http_version=limits.unconventional_version)
            break
        except gunicorn_h1c.IncompleteError:
            if len(data) > limits.buffer:
                sock.unread(data)
                return None
            more = sock.recv(_HEADER_BUFFER)
            if not more:
                sock.unread(data)
                return None
            last = len(data)
            data += more
        except Exception:
            # Malformed or over a limit: gunicorn answers it.
            sock.unread(data)
            return None
    request = _plain(parsed, data, limits)
    if request is None:
        sock.unread(data)
    return request


def _plain(parsed: dict, data: bytes, limits: Limits) -> Request | None:
    uri = parsed["path"].decode("latin-1")
    # Origin form only ("/path?query"); the rest goes through gunicorn's URI
    # handling.  Empty lines before the request line shift its measure.
    if (not uri.startswith("/") or uri.startswith("//") or "#" in uri
            or data[:1] == b"\r"):
        return None
    headers = []
    seen: set[str] = set()
    for raw_name, raw_value in parsed["headers"]:
        lowered = raw_name.lower()
        if lowered in limits.gunicorn_headers or b"_" in raw_name:
            return None
        name = raw_name.decode("latin-1").upper()
        if name in _SINGLE:
            if name in seen:
                return None
            seen.add(name)
        value = raw_value.decode("latin-1")
        if name == "CONTENT-LENGTH" and not (value.isascii() and value.isdigit()):
            return None
        headers.append((name, value))
    method = parsed["method"].decode("latin-1")
    if limits.casefold_method:
        method = method.upper()
    path, _, query = uri.partition("?")
    return Request(method, uri, path, query, f"HTTP/1.{parsed['minor_version']}",
                   headers, data[parsed["consumed"]:])


class Environ:
    """Builds the WSGI environment of a plain request as gunicorn does."""

    def __init__(self, cfg: Any, server: tuple) -> None:
        """``server``: the TCP listener's address (host, port, ...)."""
        self._base = {
            "wsgi.errors": WSGIErrorsWrapper(cfg),
            "wsgi.version": (1, 0),
            "wsgi.multithread": False,
            "wsgi.multiprocess": cfg.workers > 1,
            "wsgi.run_once": False,
            "wsgi.file_wrapper": FileWrapper,
            "wsgi.input_terminated": True,
            "SERVER_SOFTWARE": SERVER_SOFTWARE,
            "wsgi.url_scheme": "http",
            "SERVER_NAME": server[0],
            "SERVER_PORT": str(server[1]),
            "SCRIPT_NAME": "",
        }

    def build(self, request: Request, sock: Any, client: tuple) -> dict[str, Any]:
        """``client``: the TCP peer's address (host, port, ...)."""
        environ = dict(self._base)
        length = 0
        for name, value in request.headers:
            if name == "CONTENT-TYPE":
                environ["CONTENT_TYPE"] = value
                continue
            if name == "CONTENT-LENGTH":
                environ["CONTENT_LENGTH"] = value
                length = int(value)
                continue
            key = "HTTP_" + name.replace("-", "_")
            if key in environ:
                environ[key] = f"{environ[key]},{value}"
            else:
                environ[key] = value
        unreader = SocketUnreader(sock)
        if request.rest:
            unreader.unread(request.rest)
        environ["wsgi.input"] = Body(LengthReader(unreader, length))
        environ["gunicorn.socket"] = sock
        environ["REQUEST_METHOD"] = request.method
        environ["QUERY_STRING"] = request.query
        environ["RAW_URI"] = request.uri
        environ["SERVER_PROTOCOL"] = request.version
        environ["REMOTE_ADDR"] = client[0]
        environ["REMOTE_PORT"] = str(client[1])
        path = request.path
        environ["PATH_INFO"] = (urllib.parse.unquote_to_bytes(path).decode("latin-1")
                                if "%" in path else path)
        return environ


class Response:
    """What the application started: status and headers, then the bytes sent.

    The attributes are those gunicorn's access logger reads.
    """

    __slots__ = ("committed", "headers", "sent", "status", "written")

    def __init__(self) -> None:
        self.status: str | None = None
        self.headers: list[tuple[str, str]] = []
        self.sent = 0
        self.committed = False  # the head is (being) sent
        # What the application gave the legacy write() callable: sent
        # before the body it returns, as PEP 3333 asks.
        self.written: list[bytes] = []

    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], None]:
        if exc_info is not None and self.committed:
            raise exc_info[1].with_traceback(exc_info[2])
        for name, value in headers:
            # A line break in a header would let a value start a new header
            # or end the head (response splitting).
            if "\n" in name or "\r" in name or "\n" in value or "\r" in value:
                raise ValueError(f"invalid response header {name!r}")
        self.status = status
        self.headers = headers
        return self.written.append

    def head(self) -> bytes:
        lines = [f"HTTP/1.1 {self.status}\r\nServer: gunicorn\r\n"
                 f"Date: {rendering.http_date()}\r\nConnection: close\r\n"]
        lines.extend(f"{name}: {value}\r\n" for name, value in self.headers
                     if name.lower() != "connection")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")


def error_parts(error: PlacementError, environ: dict) -> tuple[str, list[tuple[str, str]],
                                                              bytes]:
    """Status, headers and body of ``error`` in Placement's shape, for answers
    the worker gives where the application cannot."""
    body = rendering.dumps(rendering.error_body(error, environ, None))
    return (f"{error.status} {error.title}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))], body)


def send(sock: Any, request: Request, response: Response, body: Iterable[bytes]) -> None:
    """Send the response: head and body in one write when the body is a list."""
    head = response.head()
    response.committed = True
    if request.method == "HEAD" or response.status.startswith(_BODILESS):
        sock.sendall(head)
        return
    if isinstance(body, list) and len(body) <= 1 and not response.written:
        data = body[0] if body else b""
        sock.sendall(head + data)
        response.sent = len(data)
        return
    sock.sendall(head)
    for chunk in itertools.chain(response.written, body):
        if chunk:
            sock.sendall(chunk)
            response.sent += len(chunk)


def untimed(sock: socket.socket) -> bool:
    """Whether ``sock`` is still blocking with no timeout set: a call on it
    with ``DONTWAIT`` does not wait, and Python makes no poll() before it."""
    return bool(DONTWAIT) and sock.gettimeout() is None


def close(sock: socket.socket, linger: Callable[[Any], None]) -> None:
    """Close at once when the client sent nothing more; otherwise ``linger``
    (gunicorn's graceful close), so unread bytes do not reset the connection
    before the client has read the answer.  ``sock`` is the plain socket."""
    try:
        if untimed(sock):
            # A look that does not wait needs no change of mode first.
            pending = sock.recv(1, PEEK_NOW)
        else:
            sock.setblocking(False)
            pending = sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        sock.close()
        return
    except OSError:
        pending = b""
    if pending:
        linger(sock)
    else:
        sock.close()

