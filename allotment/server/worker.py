"""The gunicorn worker of allotment-api: a sync worker with a client deadline.

A sync worker serves one connection at a time, and gunicorn's own socket
reads have no timeout: a client that sends its request a byte at a time (or
opens a connection and says nothing) holds the worker until the arbiter's
``timeout`` kills it.  Here a client has ``[allotment] client_timeout``
seconds from its connection's acceptance to send the whole request, and as
long again to take the whole response; a client that misses either is
disconnected and the worker moves on.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import select
import socket
import sys
import time
from typing import Any

from gunicorn import util
from gunicorn.http.errors import LimitRequestLine, ParseException
from gunicorn.workers.sync import StopWaiting, SyncWorker

from allotment import errors
from allotment.server import exchange

# Linux's accept() does not pass a listener's O_NONBLOCK on to the accepted
# socket (BSDs do): there it is blocking already, and gunicorn's call to make
# it so is a system call that changes nothing.
_ACCEPTED_BLOCKING = sys.platform.startswith("linux")


class DeadlineSocket:
    """A client socket with a deadline for reading the request and another
    for writing the response.

    The request must arrive within ``seconds`` of the connection's
    acceptance; the response must be taken within ``seconds`` of its first
    byte.  Time the application spends in between counts against neither.
    At a read deadline the connection is shut down and reads see end of
    file, which gunicorn treats as a client that went away: no error is
    logged for it, and a request body cut short reaches the application as a
    short (malformed) body, never as an exception.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._sock = sock
        self._seconds = seconds
        self._read_by = time.monotonic() + seconds
        self._write_by: float | None = None
        self._unread = b""
        self.expired = False

    def unread(self, data: bytes) -> None:
        """Give ``data`` back: the next reads return it before reading on."""
        self._unread = data + self._unread

    def _expire(self) -> None:
        if not self.expired:
            self.expired = True
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def recv(self, size: int, *flags: int) -> bytes:
        if self._unread:
            data, self._unread = self._unread[:size], self._unread[size:]
            return data
        remaining = self._read_by - time.monotonic()
        if remaining <= 0:
            self._expire()
        if self.expired:
            return b""
        if exchange.untimed(self._sock):
            # The request has mostly arrived by the time its connection is
            # accepted: take what is there without setting a timeout and
            # polling first (two system calls on every request).
            try:
                return self._sock.recv(size, exchange.DONTWAIT | (flags[0] if flags else 0))
            except BlockingIOError:
                pass
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv(size, *flags)
        except TimeoutError:
            self._expire()
            return b""

    def _write_time(self) -> float:
        """Seconds left to write; the deadline starts with the first write."""
        if self._write_by is None:
            self._write_by = time.monotonic() + self._seconds
        remaining = self._write_by - time.monotonic()
        if remaining <= 0:
            self._expire()
        if self.expired:
            raise BrokenPipeError(32, "client deadline passed")
        return remaining

    def _write(self, method: str, *args: Any) -> Any:
        self._sock.settimeout(self._write_time())
        try:
            return getattr(self._sock, method)(*args)
        except TimeoutError:
            self._expire()
            raise BrokenPipeError(32, "client deadline passed") from None

    def send(self, data: bytes, *flags: int) -> int:
        return self._write("send", data, *flags)

    def sendall(self, data: bytes, *flags: int) -> None:
        if not flags and exchange.untimed(self._sock):
            # Most responses fit in the socket's buffer: one send that does
            # not wait, and the timed path only for what did not fit.
            self._write_time()
            try:
                sent = self._sock.send(data, exchange.DONTWAIT)
            except BlockingIOError:
                sent = 0
            if sent == len(data):
                return None
            data = memoryview(data)[sent:]
        return self._write("sendall", data, *flags)

    def sendfile(self, *args: Any) -> int:
        return self._write("sendfile", *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class DeadlineSyncWorker(SyncWorker):
    """gunicorn's sync worker, with :class:`DeadlineSocket` connections."""

    #: Seconds per connection; allotment-api sets it from the configuration
    #: before gunicorn forks its workers.
    client_timeout: float = 30.0

    _poller: Any = None
    _by_fd: dict[int, Any]
    _notified = float("-inf")

    #: Seconds between two heartbeats at most.  The arbiter only asks that
    #: one arrive within its ``timeout`` (120 s); gunicorn's loop sends
    #: three per request, a file-time update each (~8 us apiece).
    HEARTBEAT_INTERVAL = 1.0

    def notify(self) -> None:
        now = time.monotonic()
        if now - self._notified >= self.HEARTBEAT_INTERVAL:
            self._notified = now
            super().notify()

    def wait(self, timeout: float) -> list | None:
        """Wait for a connection as gunicorn does, but so that one waiting
        worker wakes per connection.

        gunicorn's select() wakes every idle worker for each connection;
        all but one find nothing to accept and go back to sleep.  On a
        machine with few cores those wake-ups cost each small request a
        noticeable share of its time.  epoll's EPOLLEXCLUSIVE (Linux) wakes
        one waiter per event.
        """
        exclusive = getattr(select, "EPOLLEXCLUSIVE", None)
        if exclusive is None:
            return super().wait(timeout)
        if self._poller is None:
            self._poller = select.epoll()
            self._by_fd = {}
            for listener in self.sockets:
                self._poller.register(listener.fileno(), select.EPOLLIN | exclusive)
                self._by_fd[listener.fileno()] = listener
            self._poller.register(self.PIPE[0], select.EPOLLIN)
            self._by_fd[self.PIPE[0]] = self.PIPE[0]
        try:
            self.notify()
            ready = [self._by_fd[fd] for fd, _ in self._poller.poll(timeout)]
            if self.PIPE[0] in ready:
                os.read(self.PIPE[0], 1)
            return ready
        except OSError as exc:
            # As gunicorn: an interrupted wait tries the listeners; a closed
            # descriptor means the worker is being shut down.
            if exc.errno == errno.EINTR:
                return self.sockets
            if exc.errno == errno.EBADF and self.nr < 0:
                return self.sockets
            if exc.errno == errno.EBADF:
                raise StopWaiting from None
            raise

    _limits: exchange.Limits | None = None
    _environs: dict[int, exchange.Environ | None]

    def accept(self, listener) -> None:
        client, addr = listener.accept()
        if not _ACCEPTED_BLOCKING:
            client.setblocking(True)
        # gunicorn also marks the socket close-on-exec: Python makes every
        # new descriptor so already (PEP 446).
        self.handle(listener, client, addr)

    def handle(self, listener, client, addr) -> None:
        conn = DeadlineSocket(client, self.client_timeout)
        builder = self._environ_for(listener)
        request = None
        if builder is not None:
            try:
                request = exchange.read_plain(conn, self._limits)
            except OSError as exc:
                self._client_gone(exc)
                util.close_graceful(client)
                return
        if request is None:
            # Anything but a plain request (and anything unread of it) is
            # gunicorn's to answer.
            super().handle(listener, conn, addr)
            return
        try:
            environ = builder.build(request, conn, addr)
            response, seconds = self._serve(conn, addr, environ, request)
        except OSError as exc:
            # Reading the body or closing the answer found the client gone.
            self._client_gone(exc)
            return
        finally:
            exchange.close(client, util.close_graceful)
        # Logged once the connection is closed: a client reading to the end
        # of the connection has its whole answer without waiting for it.
        self.log.access(response, None, environ, datetime.timedelta(seconds=seconds))

    def _environ_for(self, listener) -> exchange.Environ | None:
        if self._limits is None:
            self._limits = exchange.Limits(self.cfg)
            self._environs = {}
        key = listener.fileno()
        if key not in self._environs:
            address = listener.getsockname()
            # A UNIX socket's address is a path: gunicorn's path names it.
            self._environs[key] = (exchange.Environ(self.cfg, address)
                                   if isinstance(address, tuple) else None)
        return self._environs[key]

    def _serve(self, conn: DeadlineSocket, addr, environ: dict,
               request: exchange.Request) -> tuple[exchange.Response, float]:
        """Answer ``request``: the response sent and the seconds it took."""
        started = time.perf_counter()
        self.nr += 1
        if self.nr >= self.max_requests:
            self.log.info("Autorestarting worker after current request.")
            self.alive = False
        response = exchange.Response()
        result = None
        try:
            result = self.wsgi(environ, response.start_response)
            body = result if response.status is not None else list(result)
            exchange.send(conn, request, response, body)
        except OSError as exc:
            # The client's socket, as in gunicorn.
            self._client_gone(exc)
        except Exception:
            self.log.exception("Error handling request %s", request.uri)
            if not response.committed:
                # As the application answers what it did not expect.
                response = exchange.Response()
                status, headers, data = exchange.error_parts(
                    errors.PlacementError("An unexpected error occurred."), environ)
                response.start_response(status, headers)
                try:
                    exchange.send(conn, request, response, [data])
                except OSError as exc:
                    self._client_gone(exc)
        finally:
            if hasattr(result, "close"):
                result.close()
        return response, time.perf_counter() - started

    def _client_gone(self, exc: OSError) -> None:
        if exc.errno in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
            self.log.debug("Ignoring a client that went away: %s", exc)
        else:
            self.log.exception("Socket error processing request.")

    def handle_error(self, req, client, addr, exc) -> None:
        if isinstance(exc, LimitRequestLine):
            # A request line too long for gunicorn to read gets the 414 the
            # application gives a query string over its limit.
            self.log.debug("Request line too long: %s", exc)
            error: errors.PlacementError = errors.RequestURITooLong(
                f"The request line is longer than {self.cfg.limit_request_line} bytes.")
        elif isinstance(exc, ParseException):
            # A request gunicorn cannot read (a malformed request line,
            # header or Content-Length, too many headers ...) is bad input
            # like any other: a 400 in Placement's JSON shape, not
            # gunicorn's plain page.
            self.log.debug("Unreadable request: %s", exc)
            error = errors.BadRequest(f"The request could not be read: {exc}")
        else:
            super().handle_error(req, client, addr, exc)
            return
        status, headers, body = exchange.error_parts(error, {})
        head = f"HTTP/1.1 {status}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers) + "Connection: close\r\n\r\n"
        with contextlib.suppress(OSError):
            client.sendall(head.encode("latin-1") + body)
