"""Which database errors become which Placement errors (storage/faults.py)."""

from __future__ import annotations

import sqlite3

import psycopg
import pymysql
import pytest
import sqlalchemy as sa

from allotment import errors
from allotment.storage import faults


def _wrapped(cls, orig, **kw):
    return cls("SELECT 1", {}, orig, **kw)


class _PgError(Exception):
    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


@pytest.mark.parametrize("exc", [
    _wrapped(sa.exc.OperationalError, psycopg.OperationalError("server closed the connection")),
    _wrapped(sa.exc.OperationalError, pymysql.err.OperationalError(2013, "Lost connection")),
    _wrapped(sa.exc.OperationalError, pymysql.err.OperationalError(1205, "Lock wait timeout")),
    _wrapped(sa.exc.OperationalError, sqlite3.OperationalError("database or disk is full")),
    _wrapped(sa.exc.OperationalError,
             sqlite3.OperationalError("attempt to write a readonly database")),
    _wrapped(sa.exc.InterfaceError, pymysql.err.InterfaceError(0, "")),
    _wrapped(sa.exc.DBAPIError, Exception("gone"), connection_invalidated=True),
    sa.exc.TimeoutError("QueuePool limit reached"),
    pymysql.err.OperationalError(2013, "Lost connection"),  # unwrapped, from the driver
    psycopg.OperationalError("connection refused"),
    # A PostgreSQL standby still in recovery, reached during a failover.
    _wrapped(sa.exc.InternalError, psycopg.errors.ReadOnlySqlTransaction(
        "cannot execute INSERT in a read-only transaction")),
    _wrapped(sa.exc.NotSupportedError, psycopg.errors.FeatureNotSupported(
        "cannot access temporary or unlogged relations during recovery")),
    # Galera: a COMMIT whose outcome is unknown (never run again).
    _wrapped(sa.exc.OperationalError, pymysql.err.OperationalError(
        1180, "Got error 6 during COMMIT: Error while appending streaming replication "
        "fragment (Not connected to Primary Component)")),
])
def test_unavailability_is_a_503_that_is_not_retried(exc):
    translated = faults.translate(exc)
    assert isinstance(translated, errors.DatabaseUnavailable)
    assert not isinstance(translated, errors.TransactionAborted)
    assert translated.status == 503
    assert translated.headers["Retry-After"] == "1"


@pytest.mark.parametrize("exc", [
    _wrapped(sa.exc.OperationalError, _PgError("40P01")),
    _wrapped(sa.exc.OperationalError, _PgError("40001")),
    _wrapped(sa.exc.OperationalError, pymysql.err.OperationalError(1213, "Deadlock found")),
    _wrapped(sa.exc.OperationalError, sqlite3.OperationalError("database is locked")),
    # Galera: a certification failure surfacing at COMMIT, and a transaction
    # aborted inside a savepoint by a write set applied from another node.
    _wrapped(sa.exc.OperationalError,
             pymysql.err.OperationalError(1180, "Got error 149 during COMMIT")),
    _wrapped(sa.exc.OperationalError,
             pymysql.err.OperationalError(1305, "SAVEPOINT sa_savepoint_1 does not exist")),
])
def test_conflicts_between_transactions_may_be_retried(exc):
    assert isinstance(faults.translate(exc), errors.TransactionAborted)


@pytest.mark.parametrize(("message", "name"), [
    ("Trigger 'allotment_fw_resource_providers_upd' has an error in its body: 'You have "
     "an error in your SQL syntax; check the manual'", "allotment_fw_resource_providers_upd"),
    ("Trigger 'placement.allotment_fw_allocations_ins' has an error in its body: 'x'",
     "allotment_fw_allocations_ins"),
    ("Unknown trigger has an error in its body: 'x'", ""),
])
def test_a_trigger_the_server_keeps_disabled_is_named_and_retried(message, name):
    exc = _wrapped(sa.exc.ProgrammingError, pymysql.err.ProgrammingError(1064, message))
    assert faults.broken_trigger(exc.orig) == name
    assert isinstance(faults.translate(exc), errors.TransactionAborted)


def test_a_syntax_error_of_a_statement_is_not_a_disabled_trigger():
    exc = _wrapped(sa.exc.ProgrammingError, pymysql.err.ProgrammingError(
        1064, "You have an error in your SQL syntax; near 'FORM x'"))
    assert faults.broken_trigger(exc.orig) is None
    assert faults.translate(exc) is None


def test_a_galera_node_not_ready_is_a_503_to_wait_for():
    exc = _wrapped(sa.exc.OperationalError, pymysql.err.OperationalError(
        1047, "WSREP has not yet prepared node for application use"))
    translated = faults.translate(exc)
    assert isinstance(translated, errors.NodeNotReady)
    assert not isinstance(translated, errors.TransactionAborted)
    assert translated.status == 503


@pytest.mark.parametrize("exc", [
    _wrapped(sa.exc.IntegrityError, sqlite3.IntegrityError("UNIQUE constraint failed")),
    _wrapped(sa.exc.ProgrammingError, psycopg.ProgrammingError("syntax error")),
    _wrapped(sa.exc.NotSupportedError, psycopg.errors.FeatureNotSupported("not this")),
    ValueError("not a database error"),
    errors.NotFound("no such provider"),
])
def test_other_errors_are_left_alone(exc):
    assert faults.translate(exc) is None


def test_connections_to_a_read_only_server_are_replaced(db, database_url):
    """A PostgreSQL server that became a standby (a load balancer's pick
    during a failover) refuses writes for as long as a session lasts: the
    write is a 503, and that connection and every pooled one as old are
    replaced, so the next write reaches the server as it is now."""
    from allotment.service import resource_providers as provider_service

    if db.backend != "postgresql":
        pytest.skip("PostgreSQL's standbys")
    name = sa.engine.make_url(database_url).database
    admin = sa.create_engine(database_url.rsplit("/", 1)[0] + "/postgres",
                             isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(
                f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        db.engine.dispose()
        with pytest.raises(errors.DatabaseUnavailable):
            provider_service.create_provider(db, name="on-a-standby")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        provider_service.create_provider(db, name="on-the-primary")
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        admin.dispose()
