"""What a database error means for the request that met it.

Every DBAPI error that is not about the data itself (an integrity error is
handled where it can happen) says the database could not do the work right
now: the server went away, a connection was cut, a statement ran past its
timeout, the disk is full or read-only, or the transaction was chosen as a
deadlock victim.  In every case the transaction did not commit, so the
client gets a 503 it may retry, never a 500.
"""

from __future__ import annotations

import logging
import re

import sqlalchemy as sa

from allotment import errors

LOG = logging.getLogger(__name__)

# SQLSTATEs of PostgreSQL's serialization_failure and deadlock_detected, and
# MySQL's errors for a transaction the server aborted: the transaction is
# doomed but running it again can succeed.  On a Galera cluster a
# certification failure, or a transaction aborted by a write set applied
# from another node, is reported as a deadlock (1213), an error during
# COMMIT (1180), or, when the abort came inside a savepoint, as that
# savepoint missing (1305).  A lock wait that timed out is not retried: it
# already took the whole statement timeout, and the client should hear of
# it then.
_PG_RETRYABLE = {"40001", "40P01"}
_MYSQL_RETRYABLE = {1213, 1180, 1305}
# An error during COMMIT is an abort only when the storage engine said so
# (its error 149, HA_ERR_LOCK_DEADLOCK: a certification failure or a
# deadlock).  Any other (on Galera, a write set that could not be appended
# once the node lost its primary component) leaves the commit's outcome
# unknown: the other nodes may have applied it.  Running such a write again
# would answer as if the first attempt never was -- a new consumer's claim
# committed, then refused with 409 -- so it is a 503 saying so.
_COMMIT_ABORTED = ("error 149 ", "deadlock")
# "WSREP has not yet prepared node for application use": a Galera node
# joining, or without a primary component.
_MYSQL_NOT_READY = {1047}
# A PostgreSQL server that cannot take writes or read the epoch's unlogged
# table: a standby still in recovery, reached through a load balancer while
# a failover is under way (read_only_sql_transaction; feature_not_supported
# is raised for unlogged tables during recovery).
_PG_READ_ONLY = "25006"
_PG_IN_RECOVERY = ("0A000", "during recovery")


# MariaDB parses a table's triggers each time it opens the table, and an
# instance of the table whose parse failed (for whatever passing reason:
# the server keeps whatever error the parser met) stays in its table
# cache with every trigger of the table disabled.  Every write that later
# gets that instance fails with error 1064 naming the trigger, although
# the stored definition is sound, until the instance leaves the cache.
# Such a write wrote nothing; the instance is closed (storage/db.py) and
# the write run again.
_BROKEN_TRIGGER = re.compile(
    r"Trigger '(?:[^']*\.)?([^'.]+)' has an error in its body"
    r"|Unknown trigger has an error in its body")


def broken_trigger(orig: BaseException | None) -> str | None:
    """The name of the trigger a MySQL/MariaDB error says it could not use
    ("" when the server does not name it); None for any other error."""
    args = getattr(orig, "args", ())
    if not args or args[0] != 1064:
        return None
    found = _BROKEN_TRIGGER.search(str(args[1]) if len(args) > 1 else "")
    return None if found is None else (found.group(1) or "")


def read_only_server(orig: BaseException) -> bool:
    """Whether a driver error says the PostgreSQL server is read-only or in
    recovery (a standby), rather than anything about this transaction."""
    sqlstate = getattr(orig, "sqlstate", None)
    return sqlstate == _PG_READ_ONLY or (
        sqlstate == _PG_IN_RECOVERY[0] and _PG_IN_RECOVERY[1] in str(orig))


def is_transient(exc: sa.exc.DBAPIError) -> bool:
    """A conflict with another transaction: running this one again may work."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _PG_RETRYABLE:
        return True
    code = _mysql_code(exc)
    if code == 1180:
        return any(word in str(orig).lower() for word in _COMMIT_ABORTED)
    if code in _MYSQL_RETRYABLE:
        return True
    return "database is locked" in str(orig)


def waited_out_a_lock(exc: BaseException) -> bool:
    """Whether ``exc`` (as translated) comes from SQLite's write lock, which
    was waited for the whole busy timeout already: running the write again
    would make the client wait that long once more."""
    cause = exc.__cause__
    return isinstance(cause, sa.exc.DBAPIError) and "database is locked" in str(cause.orig)


def _mysql_code(exc: sa.exc.DBAPIError) -> object:
    args = getattr(exc.orig, "args", ())
    return args[0] if args else None


def translate(exc: Exception) -> errors.DatabaseUnavailable | None:
    """The Placement error for a database failure; None when ``exc`` is not one
    (integrity errors included: callers that expect them handle them)."""
    if isinstance(exc, sa.exc.TimeoutError):
        LOG.warning("No database connection free in time: %s", exc)
        return errors.DatabaseUnavailable(
            "No database connection became free in time. Please retry.")
    if _raw_driver_failure(exc):
        # Raised by the driver where SQLAlchemy does not wrap it (setting a
        # connection's isolation level as it is handed out).
        LOG.warning("Database unavailable: %s", exc)
        return errors.DatabaseUnavailable(
            "The database is unavailable; nothing was written. Please retry.")
    if not isinstance(exc, sa.exc.DBAPIError) or isinstance(exc, sa.exc.IntegrityError):
        return None
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
    if read_only_server(exc.orig):
        LOG.warning("Database read-only (a standby in recovery?): %s", reason)
        return errors.DatabaseUnavailable(
            "The database cannot take this work now (it is read-only or in recovery); "
            "nothing was written. Please retry.")
    if broken_trigger(exc.orig) is not None:
        LOG.warning("A cached table's trigger could not be used: %s", reason)
        return errors.TransactionAborted(
            "The database could not use one of its triggers; nothing was written. "
            "Please retry.")
    if _mysql_code(exc) in _MYSQL_NOT_READY:
        LOG.warning("Database node not ready: %s", reason)
        return errors.NodeNotReady(
            "The database node cannot take work now; nothing was written. Please retry.")
    if is_transient(exc):
        LOG.info("Transaction aborted by the database: %s", reason)
        return errors.TransactionAborted(
            "The database aborted the transaction because of a conflicting "
            "one; nothing was written. Please retry.")
    if _mysql_code(exc) == 1180:
        LOG.warning("Commit outcome unknown: %s", reason)
        return errors.DatabaseUnavailable(
            "The database could not confirm the commit: the write may or may not "
            "have been made. Read it back before retrying.")
    if isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError) or \
            exc.connection_invalidated:
        LOG.warning("Database unavailable: %s", reason)
        return errors.DatabaseUnavailable(
            "The database is unavailable; nothing was written. Please retry.")
    return None


_DRIVERS = ("pymysql", "psycopg", "sqlite3")


def _raw_driver_failure(exc: Exception) -> bool:
    """A PEP 249 OperationalError or InterfaceError straight from a driver."""
    return any(cls.__name__ in ("OperationalError", "InterfaceError")
               and cls.__module__.split(".")[0] in _DRIVERS
               for cls in type(exc).__mro__)
