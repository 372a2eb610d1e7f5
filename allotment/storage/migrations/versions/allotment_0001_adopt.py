"""allotment's own tables beside upstream Placement's: the change feed, the
triggers that report other writers to it, and (MySQL) exact name matching.

The first of allotment's own history (kept in ``allotment_version``; upstream's
``alembic_version`` stays at a082b8bb98d0, so upstream's processes and tools
find their schema current while both serve one database).  This is the
migration that adopts a database upstream Placement filled, and its
downgrade is the hand-back: afterwards the database is exactly upstream's
schema at a082b8bb98d0 again, with every row written meanwhile.

Each step is written so that running it again after an interruption
finishes the job: MySQL commits every DDL statement on its own, so a
failure part way there leaves a database that ``db sync`` resumes (and that
upstream still serves, since only allotment's additions are half made).

* ``placement_changes`` / ``placement_feed_state``: the change feed
  (storage/feed.py);
* ``allotment_writer``: what lets SQLite's triggers tell allotment's writes
  from others' (storage/foreign.py);
* ``allotment_adoption``: on MySQL, each upstream table's collation before
  adoption.  Names are compared by their exact characters on every backend:
  on MySQL the tables are converted to utf8mb4 with a binary collation that
  does not pad (utf8mb4_nopad_bin on MariaDB, utf8mb4_0900_bin on MySQL 8),
  and back to what they were on hand-back.

Revision ID: allotment_0001
Revises:
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from allotment.storage import foreign

revision = "allotment_0001"
down_revision = None
branch_labels = None
depends_on = None

# 64-bit ids, but SQLite only autoincrements an INTEGER PRIMARY KEY.
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UPSTREAM = (
    "allocations", "consumer_types", "consumers", "inventories", "placement_aggregates",
    "projects", "resource_classes", "resource_provider_aggregates", "resource_providers",
    "resource_provider_traits", "traits", "users",
)
OURS = ("placement_changes", "placement_feed_state", "allotment_writer",
        "allotment_adoption")


def _exists(bind, table: str) -> bool:
    return sa.inspect(bind).has_table(table)


def upgrade() -> None:
    bind = op.get_bind()
    if not _exists(bind, "placement_changes"):
        op.create_table(
            "placement_changes",
            sa.Column("id", _ID, primary_key=True, autoincrement=True),
            sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("data", sa.Text(), nullable=False),
            # Never reuse an id, even after every row was pruned.
            sqlite_autoincrement=True,
        )
        op.create_index("ix_placement_changes_created_at", "placement_changes",
                        ["created_at"])
    if not _exists(bind, "placement_feed_state"):
        state = op.create_table(
            "placement_feed_state",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("pruned_below", sa.BigInteger, nullable=False, server_default="0"),
        )
        op.bulk_insert(state, [{"id": 1, "pruned_below": 0}])
    if not _exists(bind, "allotment_writer"):
        op.create_table("allotment_writer",
                        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False))
    if not _exists(bind, "allotment_adoption"):
        op.create_table(
            "allotment_adoption",
            sa.Column("table_name", sa.String(64), primary_key=True),
            sa.Column("original_collation", sa.String(64), nullable=False),
        )
    if bind.dialect.name == "mysql":
        _exact_names(bind)
    foreign.install(bind)


def downgrade() -> None:
    bind = op.get_bind()
    foreign.remove(bind)
    if bind.dialect.name == "mysql" and _exists(bind, "allotment_adoption"):
        _restore_collations(bind)
    for table in reversed(OURS):
        if _exists(bind, table):
            op.drop_table(table)


# -- MySQL collations ---------------------------------------------------------


def _target_collation(bind) -> str:
    version = bind.execute(sa.text("SELECT VERSION()")).scalar() or ""
    return "utf8mb4_nopad_bin" if "mariadb" in version.lower() else "utf8mb4_0900_bin"


def _collations(bind) -> dict[str, str]:
    rows = bind.execute(sa.text(
        "SELECT table_name, table_collation FROM information_schema.tables "
        "WHERE table_schema = DATABASE()"))
    return {name: collation for name, collation in rows}


def _exact_names(bind) -> None:
    target = _target_collation(bind)
    now = _collations(bind)
    kept = {name for (name,) in bind.execute(sa.text(
        "SELECT table_name FROM allotment_adoption"))}
    for table in UPSTREAM:
        if table not in kept:
            # Recorded before converting: an interrupted run converts the
            # rest next time and still restores the original.
            bind.execute(sa.text(
                "INSERT INTO allotment_adoption (table_name, original_collation) VALUES (:t, :c)"),
                {"t": table, "c": now[table]})
    for table in (*UPSTREAM, *OURS):
        if now.get(table) != target:
            bind.exec_driver_sql(
                f"ALTER TABLE `{table}` CONVERT TO CHARACTER SET utf8mb4 COLLATE {target}")


def _restore_collations(bind) -> None:
    rows = bind.execute(sa.text(
        "SELECT a.table_name, a.original_collation, c.character_set_name "
        "FROM allotment_adoption a JOIN information_schema.collations c "
        "ON c.collation_name = a.original_collation"))
    now = _collations(bind)
    for table, collation, charset in rows:
        if now.get(table) != collation:
            bind.exec_driver_sql(
                f"ALTER TABLE `{table}` CONVERT TO CHARACTER SET {charset} COLLATE {collation}")
