"""Engines and transactions for SQLite, PostgreSQL and MySQL.

Reads run in a snapshot-consistent transaction; writes on SQLite take the
write lock up front (``BEGIN IMMEDIATE``) so concurrent writers queue on the
busy timeout instead of failing half way with "database is locked".
"""

from __future__ import annotations

import datetime
import logging
import os
import select
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from allotment import conf as conf_mod
from allotment.storage import direct, faults, feed, foreign, pg_rollback, watch
from allotment.storage.tables import allotment_writer

LOG = logging.getLogger(__name__)

# How long a SQLite writer waits for the lock before giving up (ms).
SQLITE_BUSY_TIMEOUT_MS = 60_000
# Defaults of [allotment] database_connect_timeout / database_statement_timeout.
CONNECT_TIMEOUT = 10
STATEMENT_TIMEOUT = 60
# How long rows of the change feed are kept ([allotment] change_feed_retention).
DEFAULT_FEED_RETENTION = datetime.timedelta(hours=1)


def storable_text(value: object) -> bool:
    """Whether ``value`` could be in a text column at all.

    Text with a NUL cannot have been stored, and PostgreSQL refuses to even
    compare it, so it is never sent: it simply matches nothing.
    """
    return isinstance(value, str) and "\x00" not in value


def url_from_conf(conf) -> str:
    """The configured database URL, or the embedded SQLite default."""
    url = conf.placement_database.connection
    if not url:
        url = "sqlite:///" + os.path.abspath(conf_mod.DEFAULT_SQLITE_PATH)
    params = conf.placement_database.connection_parameters
    if params:
        url += ("&" if "?" in url else "?") + params
    return normalise_url(url)


def normalise_url(url: str) -> str:
    """Map the driver names oslo.db deployments use onto ours.

    Upstream configs say ``postgresql://`` (psycopg2) or ``mysql+pymysql://``;
    allotment talks to PostgreSQL through psycopg 3.
    """
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("postgresql+psycopg2://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("mysql://"):
        return "mysql+pymysql://" + url.split("://", 1)[1]
    return url


# The URL and configuration each engine was made from, for the engine of
# autocommit reads made alongside it (see Database.autocommit).
_MADE_FROM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def create_engine(url: str, *, conf=None, autocommit: bool = False) -> Engine:
    """The engine for ``url``; with ``autocommit``, one whose connections
    are in autocommit mode from the start and stay so (Database.autocommit
    on MySQL)."""
    made_from = (url, conf)
    url = normalise_url(url)
    backend = sa.engine.make_url(url).get_backend_name()
    kwargs: dict = {"future": True}
    db_conf = conf.placement_database if conf is not None else None
    if db_conf is not None and db_conf.connection_debug >= 100:
        kwargs["echo"] = True
    if backend == "sqlite":
        # One connection per thread; SQLite files are cheap to open.
        kwargs["connect_args"] = {"check_same_thread": False,
                                  "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    else:
        # A connection that died with a restarted server is found out (and
        # the pool emptied of its kind) before a request uses it by looking
        # at its socket, not by a round trip (see _check_sockets).
        kwargs["pool_pre_ping"] = False
        connect_timeout, statement_timeout = CONNECT_TIMEOUT, STATEMENT_TIMEOUT
        if conf is not None:
            connect_timeout = conf.allotment.database_connect_timeout
            statement_timeout = conf.allotment.database_statement_timeout
        kwargs["connect_args"] = _timeouts(backend, connect_timeout, statement_timeout)
        if db_conf is not None:
            kwargs["pool_recycle"] = db_conf.connection_recycle_time
            if db_conf.max_pool_size is not None:
                kwargs["pool_size"] = db_conf.max_pool_size
            if db_conf.max_overflow is not None:
                kwargs["max_overflow"] = db_conf.max_overflow
            if db_conf.pool_timeout is not None:
                kwargs["pool_timeout"] = db_conf.pool_timeout
    if backend == "mysql":
        # Writes take row locks and then read what they locked: they must
        # see the latest committed rows, as on PostgreSQL, not the snapshot
        # InnoDB's default REPEATABLE READ fixed at the first read.  Reads
        # ask for REPEATABLE READ themselves (see Database.read).
        kwargs["isolation_level"] = "READ COMMITTED"
    if autocommit:
        kwargs["isolation_level"] = "AUTOCOMMIT"
        # A connection in autocommit mode holds no transaction to end: the
        # pool's ROLLBACK on its return would be a round trip for nothing.
        kwargs["pool_reset_on_return"] = None
    elif backend == "mysql":
        # The pool rolls back only what a transaction may have left open
        # (_reset_mysql); psycopg and sqlite3 skip that by themselves.
        kwargs["pool_reset_on_return"] = None
    engine = sa.create_engine(url, **kwargs)
    _MADE_FROM[engine] = made_from
    if backend == "sqlite":
        synchronous = db_conf.sqlite_synchronous if db_conf is not None else True
        _setup_sqlite(engine, synchronous=synchronous)
    elif backend == "mysql":
        mode = db_conf.mysql_sql_mode if db_conf is not None else "TRADITIONAL"
        _setup_mysql(engine, mode, statement_timeout)
        if not autocommit:
            event.listen(engine, "reset", _reset_mysql)
        _check_sockets(engine)
    elif backend == "postgresql":
        _check_sockets(engine)
        pg_rollback.install(engine)
    return engine


def autocommit_engine(engine: Engine) -> Engine | None:
    """An engine of autocommit connections made as ``engine`` was (same
    URL, configuration and session settings), on MySQL; None elsewhere.

    On MySQL switching a pooled connection to autocommit and back costs
    five round trips of its own (SET AUTOCOMMIT twice, the isolation level
    set again and committed, the pool's ROLLBACK) around a read of one;
    connections that stay in autocommit mode need none of them.  On
    PostgreSQL psycopg switches without a word to the server, and SQLite
    needs nothing (Database.autocommit).
    """
    if engine.url.get_backend_name() != "mysql" or engine not in _MADE_FROM:
        return None
    url, conf = _MADE_FROM[engine]
    return create_engine(url, conf=conf, autocommit=True)


def _timeouts(backend: str, connect: int, statement: int) -> dict:
    """Driver arguments that bound how long a request can wait on the server."""
    if backend == "postgresql":
        args: dict = {"connect_timeout": connect,
                      # Notice a server that vanished without closing the socket.
                      "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                      "keepalives_count": 3}
        # Marks the session as allotment's: the triggers that report other
        # writers' changes to the feed leave ours alone (storage/foreign.py).
        options = ["-c allotment.writer=on"]
        if statement:
            options.append(f"-c statement_timeout={statement * 1000}")
            # The statement timeout is the server's: a statement whose packets
            # never reach it (a network partition dropping them, no reset)
            # would be waited on until the network heals.  Data unacknowledged
            # for as long as a statement may run ends the connection instead
            # (TCP_USER_TIMEOUT, Linux), and the request is a 503.
            args["tcp_user_timeout"] = statement * 1000
        args["options"] = " ".join(options)
        return args
    if backend == "mysql":
        args = {"connect_timeout": connect}
        if statement:
            # The server cancels first (see _setup_mysql); the socket timeout
            # is for a server that stopped answering altogether.
            args["read_timeout"] = args["write_timeout"] = statement + 15
        return args
    return {}


def _setup_sqlite(engine: Engine, *, synchronous: bool) -> None:
    in_memory = watch.sqlite_in_memory(engine.url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        # Let us issue BEGIN ourselves (see _on_begin).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            cur.execute("PRAGMA journal_mode=WAL")
        if not synchronous:
            cur.execute("PRAGMA synchronous=OFF")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        options = conn.get_execution_options()
        if options.get("isolation_level") == "AUTOCOMMIT" or options.get("allotment_autocommit"):
            return
        # On the driver's cursor when nothing listens to statements (a
        # claim sends nothing through SQLAlchemy, see storage/direct.py).
        direct.execute_sql(conn, "BEGIN IMMEDIATE" if options.get("allotment_write")
                           else "BEGIN")


def _check_sockets(engine: Engine) -> None:
    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn, _record, _proxy):
        if not idle_connection_alive(dbapi_conn):
            # As a failed ping would: this connection and every pooled one
            # as old are replaced, and the checkout tries a new one.
            raise sa.exc.InvalidatePoolError()


def idle_connection_alive(dbapi_conn) -> bool:
    """Whether an idle psycopg or PyMySQL connection is still usable,
    without a round trip.

    Nothing arrives on an idle connection unless the server is ending it
    (it was restarted, shut down, or the session was terminated or timed
    out: an error, then end of file), so a socket with anything to read, or
    none at all, means a dead connection.  A server that vanished without a
    word looks alive here, as it does to a ping until the ping times out;
    the request then fails as it would have, with a 503.
    """
    fd = _socket_of(dbapi_conn)
    if fd is None:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def _socket_of(dbapi_conn) -> int | None:
    """The file descriptor of an open connection's socket; None if closed."""
    try:
        pgconn = getattr(dbapi_conn, "pgconn", None)
        if pgconn is not None:  # psycopg
            if dbapi_conn.closed or dbapi_conn.broken:
                return None
            return pgconn.socket
        # PyMySQL: its socket is None once closed.  Its reads are buffered,
        # but a connection at rest has read every answer to its end.
        sock = dbapi_conn._sock
        return None if sock is None else sock.fileno()
    except Exception:
        return None


def _setup_mysql(engine: Engine, mode: str, statement_timeout: int) -> None:
    # Standard resource class ids start at 0 (VCPU), as upstream numbers them.
    modes = ",".join([m for m in mode.split(",") if m.strip()] + ["NO_AUTO_VALUE_ON_ZERO"])

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        cur = dbapi_conn.cursor()
        cur.execute("SET SESSION sql_mode = %s", (modes,))
        # The session is allotment's (see storage/foreign.py).
        cur.execute("SET @allotment_writer = 1")
        if statement_timeout:
            cur.execute("SET SESSION innodb_lock_wait_timeout = %s", (statement_timeout,))
            if "mariadb" in dbapi_conn.get_server_info().lower():
                cur.execute("SET SESSION max_statement_time = %s", (statement_timeout,))
            else:
                # MySQL limits only SELECTs; writes are bounded by the lock wait.
                cur.execute("SET SESSION max_execution_time = %s",
                            (statement_timeout * 1000,))
        if galera_node(cur):
            # Causal reads and writes: a transaction's first statement,
            # whatever it is (reads, updates and deletes, inserts: 1 + 2 +
            # 4), first waits until this node has applied every write set
            # the cluster committed before it, so a change written (and
            # acknowledged) through another node is never missing from what
            # is read here -- the change feed included -- nor from what a
            # write checks.  (Writes begin without a BEGIN of their own, and
            # some with an INSERT.)
            cur.execute("SET SESSION wsrep_sync_wait = 7")
        cur.close()


# Set on a pooled connection's record by a transaction of Database's that
# has just committed: it holds nothing open, and the pool need not roll back.
_ENDED = "allotment_transaction_ended"


def _ended(conn: Connection) -> None:
    if conn.dialect.name == "mysql":  # the only pool that reads it (_reset_mysql)
        conn.connection.info[_ENDED] = True


def _reset_mysql(dbapi_conn, record, _state) -> None:
    """On MySQL the pool's ROLLBACK on a connection's return is a round trip
    of its own, after every transaction.  It is skipped only where one of
    Database's transactions has just committed on the connection; anything
    else (an error, a connection used outside Database) is rolled back as
    the pool would."""
    if record is not None and record.info.pop(_ENDED, False):
        return
    dbapi_conn.rollback()


def galera_node(cursor) -> bool:
    """Whether the server behind a DBAPI cursor replicates with Galera."""
    cursor.execute("SHOW VARIABLES LIKE 'wsrep_on'")
    row = cursor.fetchone()
    return row is not None and str(row[1]).upper() == "ON"


@contextmanager
def _failures_as_unavailable(engine: Engine | None = None) -> Iterator[None]:
    """Raise what a database failure means to the client (see faults.py)."""
    try:
        yield
    except Exception as exc:
        translated = faults.translate(exc)
        if translated is None:
            raise
        if engine is not None and isinstance(exc, sa.exc.DBAPIError) and \
                faults.read_only_server(exc.orig):
            # A server that is (again) a standby in recovery -- reached
            # through a load balancer during a failover -- refuses writes for
            # as long as a session lasts, and the balancer does not end
            # sessions on a node it marked down: every pooled connection is
            # replaced, so the next request reaches the primary as it is now.
            engine.dispose()
        if engine is not None and isinstance(exc, sa.exc.DBAPIError):
            trigger = faults.broken_trigger(exc.orig)
            if trigger is not None:
                _reopen_trigger(engine, trigger)
        raise translated from exc


def _reopen_trigger(engine: Engine, name: str) -> None:
    """Make MariaDB parse a trigger it keeps disabled in a cached table
    afresh (faults.broken_trigger): the trigger is created again, which
    closes every cached instance of its table, and every reader is told to
    read the whole world again, for a write of another program made in
    between would not have been reported.  Workers that meet the same
    instance may each do this; all that costs is a reload more."""
    try:
        with engine.connect() as conn:
            names = foreign.recreate(conn, name)
            conn.commit()
            feed.begin(conn)
            try:
                with conn.begin():
                    feed.note_reset(conn)
                    feed.flush(conn, feed.end(conn))
            finally:
                feed.end(conn)
        LOG.warning("Trigger(s) %s created again: the database had one disabled "
                    "in a cached table", ", ".join(names))
    except sa.exc.DBAPIError as exc:
        # Another worker re-creating it at the same moment, or the server
        # gone: the write's retry meets the trigger again, or its 503 stands.
        LOG.warning("Could not create trigger %s again: %s", name or "(unnamed)", exc.orig)


_REPEATABLE_READ = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"

# On SQLite an allotment write holds this row while it runs, so that the
# triggers reporting other writers' changes leave it alone (storage/foreign.py);
# writers are serial, so nobody else ever sees it.
_WRITER_IN = sa.insert(allotment_writer).values(id=1)
_WRITER_OUT = sa.delete(allotment_writer)


class Database:
    """One engine plus the kinds of transaction the service uses.

    Every write transaction ends by appending what it changed to the change
    feed (storage/feed.py), in the same transaction.
    """

    def __init__(self, engine: Engine, *,
                 feed_retention: datetime.timedelta = DEFAULT_FEED_RETENTION) -> None:
        self.engine = engine
        self.backend = engine.url.get_backend_name()
        self.feed_retention = feed_retention
        # Autocommit reads' own connections, where switching costs round
        # trips (MySQL; see autocommit_engine); else the engine's.
        self.autocommit_engine = autocommit_engine(engine)
        self.watch = watch.CommitWatch(engine)
        self.probe = watch.FeedProbe(engine)

    @classmethod
    def from_conf(cls, conf) -> Database:
        return cls(create_engine(url_from_conf(conf), conf=conf),
                   feed_retention=datetime.timedelta(
                       seconds=conf.allotment.change_feed_retention))

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction that sees one consistent snapshot."""
        with _failures_as_unavailable(self.engine), self.engine.connect() as conn:
            if self.backend == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                if self.backend == "mysql":
                    # For this transaction only, which the next statement
                    # begins: SQLAlchemy's isolation level would set the
                    # session's and set it back, each with a COMMIT, four
                    # round trips where this is one.
                    direct.execute_sql(conn, _REPEATABLE_READ)
                yield conn
            _ended(conn)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A read-write transaction: committed on success, rolled back on error.

        What the transaction changed is appended to the change feed just
        before it commits.  A database failure (see faults.py) raises
        errors.DatabaseUnavailable, a deadlock errors.TransactionAborted.
        """
        with _failures_as_unavailable(self.engine), self.engine.connect() as conn:
            conn = conn.execution_options(allotment_write=True)
            feed.begin(conn)
            try:
                with conn.begin():
                    if self.backend == "sqlite":
                        direct.execute(conn, _WRITER_IN)
                    yield conn
                    feed.flush(conn, feed.end(conn), retention=self.feed_retention)
                    if self.backend == "sqlite":
                        direct.execute(conn, _WRITER_OUT)
                _ended(conn)
            finally:
                feed.end(conn)

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """A connection whose every statement is its own transaction.

        For single reads that need no consistency with each other: one
        round trip, no BEGIN or COMMIT.
        """
        if self.autocommit_engine is not None:
            with _failures_as_unavailable(self.autocommit_engine), \
                    self.autocommit_engine.connect() as conn:
                yield conn
            return
        with _failures_as_unavailable(self.engine), self.engine.connect() as conn:
            if self.backend == "sqlite":
                # The driver is in autocommit mode already (BEGIN is ours,
                # see _setup_sqlite): skipping BEGIN is enough, and cheaper
                # than an isolation level, which SQLAlchemy sets and resets
                # with a PRAGMA on every checkout.
                yield conn.execution_options(allotment_autocommit=True)
            else:
                yield conn.execution_options(isolation_level="AUTOCOMMIT")

    @property
    def engines(self) -> tuple[Engine, ...]:
        """Every engine whose connections this database uses."""
        if self.autocommit_engine is None:
            return (self.engine,)
        return (self.engine, self.autocommit_engine)

    def dispose(self) -> None:
        self.watch.close()
        self.probe.close()
        for engine in self.engines:
            engine.dispose()
