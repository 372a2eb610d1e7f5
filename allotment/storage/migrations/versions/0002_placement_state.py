"""A one-row table holding the topology version of the provider world.

Every write that changes providers, their parents or names, inventories,
traits, aggregates or resource class names bumps ``topology_version`` in the
same transaction.  A process may then keep the static part of the
allocation-candidates snapshot in memory and trust it exactly as long as the
version it was built at is still the stored one.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    state = op.create_table(
        "placement_state",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("topology_version", sa.BigInteger, nullable=False,
                  server_default="0"),
        sa.PrimaryKeyConstraint("id", name="pk_placement_state"),
    )
    op.bulk_insert(state, [{"id": 1, "topology_version": 0}])


def downgrade() -> None:
    op.drop_table("placement_state")
