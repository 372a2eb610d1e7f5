"""The change feed replaces the topology version.

Every write appends one row to ``placement_changes`` in its own transaction,
saying which provider trees it changed, whether names of resource classes or
traits changed, and how usage moved.  API processes keep the provider world
in memory and read only the rows they have not seen.  ``placement_feed_state``
remembers below which id rows may have been pruned.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# 64-bit ids, but SQLite only autoincrements an INTEGER PRIMARY KEY.
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "placement_changes",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_placement_changes"),
        # Never reuse an id, even after every row was pruned.
        sqlite_autoincrement=True,
    )
    op.create_index("ix_placement_changes_created_at", "placement_changes", ["created_at"])
    state = op.create_table(
        "placement_feed_state",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("pruned_below", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id", name="pk_placement_feed_state"),
    )
    op.bulk_insert(state, [{"id": 1, "pruned_below": 0}])
    op.drop_table("placement_state")


def downgrade() -> None:
    state = op.create_table(
        "placement_state",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("topology_version", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id", name="pk_placement_state"),
    )
    op.bulk_insert(state, [{"id": 1, "topology_version": 0}])
    op.drop_table("placement_feed_state")
    op.drop_index("ix_placement_changes_created_at", "placement_changes")
    op.drop_table("placement_changes")
