"""Feed rows told apart from rows that later take their ids, and (on
PostgreSQL) an epoch that crash recovery and promotion reset.

A database can go back in time: commits acknowledged under relaxed
durability lost in a crash, a Galera cluster bootstrapped after a
coordinated crash, a failover to an asynchronous replica.  The rows a
process applied are then gone and their ids are handed out again, so a
process must be able to tell that the row at its place in the feed is
no longer the one it applied (storage/feed.py, ``Position``):

* ``placement_changes.stamp``: random per row.  allotment's writers draw
  it; for any other writer the server does (a column default on
  PostgreSQL and MySQL, a trigger on SQLite, whose ``ALTER TABLE`` takes
  no such default).  Rows written before this migration keep NULL.
* ``allotment_epoch``: one row holding a random token.  On PostgreSQL the
  table is UNLOGGED, so crash recovery and a replica's promotion empty
  it, and the first reader afterwards sets a new token.  Elsewhere the
  table exists, unused (rows commit in id order there, and the stamp of
  the last row applied is enough).

Nothing here is upstream's: the hand-back (``db downgrade upstream``)
removes both.

Revision ID: allotment_0002
Revises: allotment_0001
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "allotment_0002"
down_revision = "allotment_0001"
branch_labels = None
depends_on = None

_SQLITE_TRIGGER = "allotment_feed_stamp"


def upgrade() -> None:
    bind = op.get_bind()
    backend = bind.dialect.name
    inspector = sa.inspect(bind)
    columns = {c["name"] for c in inspector.get_columns("placement_changes")}
    if "stamp" not in columns:
        op.add_column("placement_changes", sa.Column("stamp", sa.BigInteger(), nullable=True))
    # A default only applies to rows written from now on: nothing is
    # rewritten, however long the feed.
    if backend == "postgresql":
        op.execute("ALTER TABLE placement_changes ALTER COLUMN stamp "
                   "SET DEFAULT ((random() * 9.0e18)::bigint)")
    elif backend == "mysql":
        op.execute("ALTER TABLE placement_changes MODIFY COLUMN stamp BIGINT NULL "
                   "DEFAULT (FLOOR(RAND() * 9.0e18))")
    else:
        op.execute(f"DROP TRIGGER IF EXISTS {_SQLITE_TRIGGER}")
        op.execute(f"CREATE TRIGGER {_SQLITE_TRIGGER} AFTER INSERT ON placement_changes "
                   "FOR EACH ROW WHEN NEW.stamp IS NULL BEGIN "
                   "UPDATE placement_changes SET stamp = random() WHERE id = NEW.id; END")
    if not inspector.has_table("allotment_epoch"):
        op.create_table(
            "allotment_epoch",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("token", sa.BigInteger, nullable=False),
            prefixes=["UNLOGGED"] if backend == "postgresql" else [],
        )


def downgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    if inspector.has_table("allotment_epoch"):
        op.drop_table("allotment_epoch")
    if bind.dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER IF EXISTS {_SQLITE_TRIGGER}")
    if "stamp" in {c["name"] for c in inspector.get_columns("placement_changes")}:
        op.drop_column("placement_changes", "stamp")
