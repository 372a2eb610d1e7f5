"""Migrations are the only way the schema changes: they must match tables.py."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from allotment.storage import migration, tables


def test_migrated_schema_matches_the_table_definitions(database):
    with database.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), tables.metadata)
    # The two version tables are Alembic's own (storage/migration.py).
    diff = [d for d in diff if not (d[0] == "remove_table"
                                    and d[1].name == migration.OWN_VERSIONS)]
    assert diff == []


def test_database_is_at_head(database):
    assert migration.current_revision(database.engine) == migration.head_revision(database.engine)


def test_upgrade_is_idempotent(database):
    migration.upgrade(database.engine)
    assert migration.current_revision(database.engine) == migration.head_revision(database.engine)


def test_sqlite_pragmas(tmp_path):
    from allotment.storage.db import create_engine

    engine = create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_sqlite_write_transactions_take_the_lock_up_front(tmp_path):
    """A second writer waits instead of failing half way through."""
    import threading
    import time

    from allotment.storage.db import Database, create_engine

    db = Database(create_engine(f"sqlite:///{tmp_path / 'w.sqlite'}"))
    migration.upgrade(db.engine)
    order: list[str] = []

    def second_writer():
        with db.write() as conn:
            order.append("second")
            conn.execute(sa.insert(tables.traits).values(name="CUSTOM_B",
                                                         created_at=sa.func.now()))

    with db.write() as conn:
        conn.execute(sa.insert(tables.traits).values(name="CUSTOM_A", created_at=sa.func.now()))
        thread = threading.Thread(target=second_writer)
        thread.start()
        time.sleep(0.3)
        order.append("first")
    thread.join(10)
    assert order == ["first", "second"]
    with db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(tables.traits)).scalar() == 2
    db.dispose()


def test_url_normalisation():
    from allotment.storage.db import normalise_url

    assert normalise_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert normalise_url("postgresql+psycopg2://h/db") == "postgresql+psycopg://h/db"
    assert normalise_url("mysql://u@h/db") == "mysql+pymysql://u@h/db"
    assert normalise_url("mysql+pymysql://u@h/db") == "mysql+pymysql://u@h/db"
    assert normalise_url("sqlite:////tmp/x") == "sqlite:////tmp/x"
