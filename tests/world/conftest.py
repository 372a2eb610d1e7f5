"""Fixtures of the world's tests."""

from __future__ import annotations

import pytest

from allotment.storage import db as db_mod


@pytest.fixture
def processes(database_url, db):
    """Three more "processes" on the same database."""
    dbs = [db_mod.Database(db_mod.create_engine(database_url)) for _ in range(3)]
    yield dbs
    for other in dbs:
        other.dispose()



def rename_holding_its_feed_id(process: db_mod.Database, uuid: str, name: str):
    """Rename a provider through ``process`` in a transaction left open
    once its feed row is appended: returns (connection, transaction, the
    feed id it holds); the caller commits and closes."""
    from allotment.storage import feed
    from allotment.storage import resource_providers as rp_store

    conn = process.engine.connect()
    tx = conn.begin()
    rp_store.rename(conn, rp_store.get_by_uuid(conn, uuid).id, name)
    return conn, tx, feed.flush(conn, feed.end(conn))
