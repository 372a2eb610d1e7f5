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
