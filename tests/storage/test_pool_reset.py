"""On MySQL a pooled connection is rolled back on its return only when a
transaction may still be open on it: after a transaction of Database's
that committed, the pool's ROLLBACK would be a round trip for nothing."""

from __future__ import annotations

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from allotment.service import resource_providers as provider_service
from allotment.storage import resource_providers as store
from tests.harness.statements import mysql_commands


@pytest.fixture
def mysql_db(db):
    if db.backend != "mysql":
        pytest.skip("only PyMySQL sends the pool's ROLLBACK to the server")
    return db


def _uuid() -> str:
    return str(uuidlib.uuid4())


def test_a_committed_write_is_not_rolled_back_by_the_pool(mysql_db):
    with mysql_commands() as commands:
        provider_service.create_provider(mysql_db, name="committed", uuid=_uuid())
    assert commands[-1] == "COMMIT", commands
    assert "ROLLBACK" not in commands


def test_a_committed_read_is_not_rolled_back_by_the_pool(mysql_db):
    rp = provider_service.create_provider(mysql_db, name="read", uuid=_uuid())
    with mysql_commands() as commands, mysql_db.read() as conn:
        store.get_by_uuid(conn, rp.uuid)
    assert commands[-1] == "COMMIT", commands
    assert "ROLLBACK" not in commands


def test_a_failed_write_is_rolled_back_and_leaves_nothing_behind(mysql_db):
    uuid = _uuid()

    class Failed(Exception):
        pass

    with mysql_commands() as commands, pytest.raises(Failed), mysql_db.write() as conn:
        store.create(conn, name="never", uuid=uuid)
        raise Failed
    assert "ROLLBACK" in commands
    assert "COMMIT" not in commands
    with mysql_db.read() as conn:
        assert store.get_by_uuid(conn, uuid) is None


def test_a_connection_used_outside_database_is_rolled_back_by_the_pool(mysql_db):
    """A transaction SQLAlchemy does not know of (begun by a statement on
    the driver's cursor) is ended by the pool as before, so the next user
    of the connection does not inherit its snapshot or its locks."""
    rp = provider_service.create_provider(mysql_db, name="outside", uuid=_uuid())
    with mysql_commands() as commands, mysql_db.engine.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()
        cursor.execute("SELECT generation FROM resource_providers "
                       "WHERE uuid = %s FOR UPDATE", (rp.uuid,))
        cursor.close()
    assert commands[-1] == "ROLLBACK", commands
    # The row lock went with the rollback: another connection takes it at once.
    other = sa.create_engine(mysql_db.engine.url, poolclass=sa.pool.NullPool,
                             connect_args={"read_timeout": 5})
    try:
        with other.connect() as conn:
            conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 1")
            conn.exec_driver_sql(
                "SELECT generation FROM resource_providers WHERE uuid = %s FOR UPDATE",
                (rp.uuid,))
            conn.rollback()
    finally:
        other.dispose()


def test_a_committed_transaction_marks_only_its_own_return(mysql_db):
    """The mark a commit leaves is taken by that connection's return: the
    next use of the same pooled connection outside Database is rolled back."""
    provider_service.create_provider(mysql_db, name="first", uuid=_uuid())
    with mysql_commands() as commands, mysql_db.engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1").all()
    assert commands[-1] == "ROLLBACK", commands
