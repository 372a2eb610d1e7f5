"""Telling cheaply that nothing was committed since an earlier look.

Every request first brings the process's world up to date from the change
feed (allotment.storage.cursor).  When nothing changed, that is a pooled
connection and an indexed read that finds no row: on SQLite, where the rest
of a small request takes a fraction of a millisecond, a noticeable share of
its time.

SQLite counts commits for us: ``PRAGMA data_version`` on one connection
returns a different number after any *other* connection (of this process or
any other) committed to the file, and the same number otherwise.  A
connection of its own that never writes therefore sees every commit, and
one pragma on it (a few microseconds, no pool) says whether the feed can
have anything new.

Other databases have no such counter that is exact (a notification can
still be on its way when a request begins), so there the feed is read every
time -- but the question "is there a row after the last one I applied?"
needs neither the pool nor its liveness check (a round trip of its own on
every checkout): :class:`FeedProbe` asks it on a connection of its own, one
round trip.  On PostgreSQL that question is a statement prepared once on
the connection and executed through libpq directly (psycopg's ``pq``
layer): about 35 us a round trip against 100 us through a cursor, which
parses the text again and builds a result object every time.  On both
servers the answer also brings the feed's newest rows, which a world a few
rows behind applies without reading the feed (``FeedProbe.recent``).  Any
failure there sends the caller the usual way (pooled, checked connections
whose errors become 503s), so the probe never changes what a client sees,
only how fast an answer comes.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from allotment.storage.feed import Position
from allotment.storage.tables import placement_changes

# After a failed probe, how long (seconds) callers go the usual way before
# the probe connects again: a database that cannot be reached must not cost
# every request two connection timeouts.
PROBE_BACKOFF = 5.0
# Name of the probe's statement, prepared on its own connection only.
PREPARED_PROBE = b"allotment_feed_probe"
# Per context (a request): the question it sent with FeedProbe.ask().
_ASKED: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "allotment_probe_asked", default=None)
# How many of the feed's newest rows the probe brings back (PostgreSQL: the
# last ones; MySQL: those from the world's own on): a world fewer rows than
# this behind catches up from the probe's answer alone
# (FeedCursor.advance), without reading the feed again.  That read takes a
# pooled connection and, on PostgreSQL, a statement planned afresh every
# time (its range depends on the value), on nearly every request that reads
# the world while schedulers claim.
RECENT_ROWS = 16
# Per context: (the position the probe's latest answer was about, the rows
# it brought in id order) when that answer found the feed moved.
_RECENT: contextvars.ContextVar[tuple[Position, list[tuple]] | None] = \
    contextvars.ContextVar("allotment_probe_recent", default=None)


class _OwnConnection:
    """One DBAPI connection kept out of the pool, used under a lock."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._conn: Any = None

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> Any:
        raise NotImplementedError

    def _close(self) -> None:
        if self._conn is not None:
            # A broken connection may fail to close too; it is dropped anyway.
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close()


class CommitWatch(_OwnConnection):
    """``mark()`` returns equal values only if nothing was committed between
    the two calls; ``None`` when it cannot tell (then the caller must look).
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._usable = _counts_commits(engine)

    def mark(self) -> int | None:
        if not self._usable:
            return None
        with self._lock:
            try:
                return self._connection().execute("PRAGMA data_version").fetchone()[0]
            except Exception:
                # Whatever went wrong, the caller reads the feed, which
                # reports a database failure in the usual way.
                self._close()
                return None

    def _connect(self) -> Any:
        dialect = self._engine.dialect
        cargs, cparams = dialect.create_connect_args(self._engine.url)
        # Only under self._lock, from whichever thread asks.
        cparams["check_same_thread"] = False
        conn = dialect.loaded_dbapi.connect(*cargs, **cparams)
        conn.isolation_level = None  # never inside a transaction of its own
        return conn


def sqlite_in_memory(url: sa.engine.URL) -> bool:
    """Whether a SQLite URL names an in-memory database (a different
    database on every connection) rather than a file."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file::memory:"):
        return True
    return "memory" in str(url.query.get("mode", ""))


def _counts_commits(engine: Engine) -> bool:
    """True for SQLite databases in a file: an in-memory database's counter
    says nothing about the pool's connections."""
    return engine.url.get_backend_name() == "sqlite" and not sqlite_in_memory(engine.url)


class FeedProbe(_OwnConnection):
    """``newer_than(position)``: whether the change feed's last row is not
    the one at ``position`` (a row came since, or the database went back:
    see ``feed.Position``); ``None`` when it cannot tell (then the caller
    reads the feed the usual way, which checks the same)."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        backend = engine.url.get_backend_name()
        self._usable = backend in ("postgresql", "mysql")
        self._epochs = backend == "postgresql"
        self._failed_at = -PROBE_BACKOFF
        # On libpq (PostgreSQL) the last rows, not "the rows past the
        # head": the question has no parameter, so a plan made once stays
        # right (_probe_sql).  Through a cursor (MySQL, whose server plans
        # every statement it is sent) the rows from the world's own on.
        self._cursor_sql = _cursor_probe_sql(backend)
        self._pgconn: Any = None
        # The question sent by ask() and not yet answered: its answer is
        # taken only by the context (request) that asked it (_ASKED).
        self._pending: object | None = None

    def ask(self) -> None:
        """Send the question now and take the answer in :meth:`newer_than`
        later, in the same context (a request): the database works on it,
        and its process wakes up, while the request is parsed and routed.
        The answer is as of when it was asked, so a caller asks once its
        request has arrived, never earlier.  Only on PostgreSQL's libpq
        path; elsewhere nothing happens."""
        if not self._may_ask():
            return
        with self._lock:
            try:
                self._connection()
                if self._pgconn is None:
                    return
                self._drop_pending()
                self._pgconn.send_query_prepared(PREPARED_PROBE, [])
                token = object()
                self._pending = token
                _ASKED.set(token)
            except Exception:
                self._give_way()

    def settle(self) -> None:
        """End the context's question if it is still unanswered (its
        request did not look), so the connection is ready for the next."""
        mine = _ASKED.get()
        if mine is None:
            return
        _ASKED.set(None)
        with self._lock:
            try:
                if self._pending is mine:
                    self._drop_pending()
            except Exception:
                self._give_way()

    def _may_ask(self) -> bool:
        return self._usable and time.monotonic() - self._failed_at >= PROBE_BACKOFF

    def _give_way(self) -> None:
        # Whatever went wrong, callers go the usual way (pooled, checked
        # connections) until the backoff has passed, then connect again.
        self._failed_at = time.monotonic()
        self._close()

    def _drop_pending(self) -> None:
        # Someone's earlier question, answered or not: its answer may be
        # older than the caller's request, so it is read and thrown away.
        if self._pending is not None:
            self._pending = None
            while self._pgconn.get_result() is not None:
                pass

    def newer_than(self, position: Position) -> bool | None:
        _RECENT.set(None)  # an earlier answer's rows are never taken for this one
        if not self._may_ask():
            return None
        with self._lock:
            try:
                conn = self._connection()
                if self._pgconn is not None:
                    return self._libpq_answer(position)
                cur = conn.cursor()
                try:
                    cur.execute(self._cursor_sql, (position.id,))
                    rows = cur.fetchall()
                finally:
                    cur.close()
                return self._moved_since(rows, position)
            except Exception:
                self._give_way()
                return None

    def recent(self, position: Position) -> list[tuple] | None:
        """The feed's rows from ``position``'s id on (or from the oldest the
        answer holds), ``(id, stamp, data, epoch)`` in id order, as the
        probe's latest answer in this context brought them, if that
        answer was about ``position`` and found the feed moved by fewer than
        RECENT_ROWS rows; once.  None otherwise (and on SQLite)."""
        kept = _RECENT.get()
        if kept is None:
            return None
        _RECENT.set(None)
        return kept[1] if kept[0] == position else None

    def _moved_since(self, rows: list, position: Position) -> bool:
        """Whether the feed moved from ``position``, from its rows from the
        position's id on (``id, stamp, data`` and on PostgreSQL the epoch,
        in id order, at most RECENT_ROWS + 1): anything but the position's
        own row alone, as it was.  The rows are kept for the cursor
        (:meth:`recent`) when they are all there are."""
        rows = [(int(row[0]), row[1], row[2], row[3] if self._epochs else None)
                for row in rows]
        last = rows[-1] if rows else None
        if not self._moved(None if last is None else (last[0], last[1], last[3]), position):
            return False
        if len(rows) <= RECENT_ROWS:  # else more may follow: the cursor reads the feed
            _RECENT.set((position, rows))
        return True

    def _moved(self, last: tuple | None, position: Position) -> bool:
        """Whether the feed's last row ``(id, stamp, epoch)`` (None: the feed
        is empty) is anything but the row at ``position``."""
        if last is None:
            return position.id != 0
        row_id, stamp, epoch = last
        return (int(row_id), stamp) != (position.id, position.stamp) or (
            self._epochs and epoch != position.epoch)

    def _libpq_answer(self, position: Position) -> bool:
        """The answer to the question this request asked ahead, else to
        the question asked now."""
        mine = _ASKED.get()
        if mine is not None:
            _ASKED.set(None)
            if self._pending is mine:
                self._pending = None
                return self._answer(self._pgconn.get_result(), position)
        self._drop_pending()
        return self._ask_libpq(position)

    def _ask_libpq(self, position: Position) -> bool:
        return self._answer(self._pgconn.exec_prepared(PREPARED_PROBE, []), position)

    def _answer(self, result: Any, position: Position) -> bool:
        if result is None or result.status != self._tuples_ok:
            message = b"no answer" if result is None else result.error_message
            raise RuntimeError(message.decode(errors="replace"))
        if self._pgconn.get_result() is not None:  # the end of an asked question
            raise RuntimeError("more than one answer to the probe")
        if result.ntuples == 0:  # an empty feed
            return self._moved(None, position)
        row = _probe_row(result, 0)
        if not self._moved((row[0], row[1], row[3]), position):
            return False
        # The rows from the world's own on (newest first), as on MySQL.
        rows = [row]
        for i in range(1, result.ntuples):
            if row[0] <= position.id:
                break
            row = _probe_row(result, i)
            rows.append(row)
        rows.reverse()
        _RECENT.set((position, rows))
        return True

    def _connect(self) -> Any:
        # Made by the pool's own creator, so with the engine's connect
        # arguments (timeouts) and connect hooks, then taken out of the pool.
        fairy = self._engine.raw_connection()
        fairy.detach()
        self._engine.dialect.set_isolation_level(fairy.dbapi_connection, "AUTOCOMMIT")
        self._pgconn = _prepared_libpq(fairy.dbapi_connection)
        if self._pgconn is not None:
            # psycopg is imported only here, where a PostgreSQL connection
            # already brought it: on other databases every process of a
            # server would otherwise hold it (and its libpq) for nothing.
            from psycopg import pq

            self._tuples_ok = pq.ExecStatus.TUPLES_OK
        return fairy

    def _close(self) -> None:
        self._pgconn = None
        self._pending = None
        super()._close()


def _probe_row(result: Any, row: int) -> tuple[int, int | None, str, int | None]:
    """(id, stamp, data, epoch) of a row of the probe's answer on libpq
    (text; None for NULL)."""
    row_id, stamp, epoch, data = (result.get_value(row, i) for i in range(4))
    return (int(row_id), None if stamp is None else int(stamp), data.decode(),
            None if epoch is None else int(epoch))


def _probe_sql() -> str:
    """PostgreSQL's probe on libpq, prepared once: the feed's last
    RECENT_ROWS rows, newest first, with their stamps, the epoch and what
    they say (storage/cursor.py applies them).  No parameter: prepared with
    one (``WHERE id >= $1``), PostgreSQL would plan it afresh every time,
    or soon settle on a generic plan that guesses a third of the rows
    match and reads the whole feed, an hour of writes, every request."""
    table = placement_changes.name
    return (f"SELECT id, stamp, (SELECT token FROM allotment_epoch WHERE id = 1), data"
            f" FROM {table} ORDER BY id DESC LIMIT {RECENT_ROWS}")


def _cursor_probe_sql(backend: str) -> str:
    """The feed's rows from the world's own on (``%s``, the driver's
    placeholder), with what they say: one round trip that says whether the
    feed moved and, when it moved by fewer than RECENT_ROWS rows, what to
    apply.  Up to RECENT_ROWS + 1 rows: a full answer may have more after
    it, and is not applied (the cursor reads the feed)."""
    table = placement_changes.name
    epoch = ", (SELECT token FROM allotment_epoch WHERE id = 1)" if backend == "postgresql" \
        else ""
    return (f"SELECT id, stamp, data{epoch} FROM {table} WHERE id >= %s"
            f" ORDER BY id LIMIT {RECENT_ROWS + 1}")


def _prepared_libpq(dbapi_connection: Any) -> Any:
    """The libpq connection under a psycopg 3 connection, with the probe
    prepared on it; None for other drivers (they take the cursor path)."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is None:
        return None
    from psycopg import pq

    result = pgconn.prepare(PREPARED_PROBE, _probe_sql().encode())
    if result.status != pq.ExecStatus.COMMAND_OK:
        raise RuntimeError(result.error_message.decode(errors="replace"))
    return pgconn
