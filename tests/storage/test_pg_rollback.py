"""A rollback on PostgreSQL keeps psycopg's prepared statements
(storage/pg_rollback.py), and still rolls back."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from allotment.storage import resource_classes
from allotment.storage.tables import resource_classes as classes_table

# A statement no other test runs: the pooled connection may hold others'.
_NAMED = sa.select(classes_table.c.id, sa.literal_column("'kept through a rollback'")).where(
    classes_table.c.name == sa.bindparam("name"))


@pytest.fixture
def pg(db):
    if db.backend != "postgresql":
        pytest.skip("psycopg's prepared statements")
    return db


class _Refused(Exception):
    pass


def _prepared(conn) -> set[str]:
    return set(conn.execute(sa.text("SELECT statement FROM pg_prepared_statements")).scalars())


def _prepare(conn) -> str:
    """Run a statement until psycopg has prepared it; its text."""
    for _ in range(8):
        conn.execute(_NAMED, {"name": "VCPU"})
    [text] = [s for s in _prepared(conn) if "kept through a rollback" in s]
    return text


def test_a_rolled_back_transaction_leaves_the_prepared_statements(pg):
    with pg.engine.connect() as conn:
        with pytest.raises(_Refused), conn.begin():
            text = _prepare(conn)
            raise _Refused
        assert text in _prepared(conn)
        # psycopg still runs it by its name: nothing was deallocated under it.
        assert conn.execute(_NAMED, {"name": "VCPU"}).scalar() is not None


def test_the_rollback_undoes_what_the_transaction_wrote(pg):
    with pytest.raises(_Refused), pg.write() as conn:
        _prepare(conn)
        resource_classes.get_or_create_class(conn, "CUSTOM_ROLLED_BACK")
        raise _Refused
    with pg.read() as conn:
        assert resource_classes.get(conn, "CUSTOM_ROLLED_BACK") is None
    with pg.engine.connect() as conn:
        assert conn.connection.driver_connection.pgconn.transaction_status == 0  # idle


def test_a_transaction_in_error_rolls_back_and_the_next_one_works(pg):
    with pg.engine.connect() as conn:
        with pytest.raises(sa.exc.DataError), conn.begin():
            text = _prepare(conn)
            conn.execute(sa.text("SELECT 1 / 0"))
        with conn.begin():
            assert text in _prepared(conn)
            assert conn.execute(_NAMED, {"name": "VCPU"}).scalar() is not None


def test_a_connection_the_server_ended_mid_transaction_is_replaced(pg):
    """The server ends the session while a transaction is open (a restart,
    a killed backend): the rollback does not answer as libpq's is expected
    to, psycopg's own rollback reports the lost connection, the pool drops
    it, and the next transaction gets a new one."""
    killer = sa.create_engine(pg.engine.url, poolclass=sa.pool.NullPool)
    try:
        with pg.engine.connect() as conn:
            ended = conn.connection.driver_connection.info.backend_pid
            with pytest.raises((_Refused, sa.exc.OperationalError)), conn.begin():
                _prepare(conn)
                with killer.connect() as other:
                    other.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": ended})
                raise _Refused
        with pg.write() as conn:
            assert conn.connection.driver_connection.info.backend_pid != ended
            assert conn.execute(_NAMED, {"name": "VCPU"}).scalar() is not None
    finally:
        killer.dispose()
