"""Upstream Placement's tables, as its own Alembic history leaves them at
this same revision id.

A database that upstream Placement 16.0.0 created and filled is at this
revision already, so allotment's next migration adopts it as it is; an
empty database gets the same tables here.  Going below this revision is
not allotment's business (upstream's history has no way down either).

Revision ID: a082b8bb98d0
Revises:
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "a082b8bb98d0"
down_revision = None
branch_labels = None
depends_on = None


def _stamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=True),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def _external(table: str, column: str, type_: sa.types.TypeEngine) -> None:
    """A table of unique names or external ids with a generated id."""
    op.create_table(
        table, *_stamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column(column, type_, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(column, name=f"uniq_{table}0{column}"),
    )


def upgrade() -> None:
    op.create_table(
        "allocations", *_stamps(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("consumer_id", sa.String(36), nullable=False),
        sa.Column("resource_class_id", sa.Integer(), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("allocations_resource_provider_class_used_idx", "allocations",
                    ["resource_provider_id", "resource_class_id", "used"])
    op.create_index("allocations_resource_class_id_idx", "allocations",
                    ["resource_class_id"])
    op.create_index("allocations_consumer_id_idx", "allocations", ["consumer_id"])

    _external("consumer_types", "name", sa.Unicode(255))
    op.create_table(
        "consumers", *_stamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("consumer_type_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid", name="uniq_consumers0uuid"),
        sa.ForeignKeyConstraint(["consumer_type_id"], ["consumer_types.id"],
                                name="consumers_consumer_type_id_fkey"),
    )
    op.create_index("consumers_project_id_user_id_uuid_idx", "consumers",
                    ["project_id", "user_id", "uuid"])
    op.create_index("consumers_project_id_uuid_idx", "consumers", ["project_id", "uuid"])
    op.create_index("consumers_consumer_type_id_idx", "consumers", ["consumer_type_id"])

    op.create_table(
        "inventories", *_stamps(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("resource_class_id", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.Integer(), nullable=False),
        sa.Column("min_unit", sa.Integer(), nullable=False),
        sa.Column("max_unit", sa.Integer(), nullable=False),
        sa.Column("step_size", sa.Integer(), nullable=False),
        sa.Column("allocation_ratio", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                            name="uniq_inventories0resource_provider_resource_class"),
    )
    op.create_index("inventories_resource_class_id_idx", "inventories",
                    ["resource_class_id"])

    op.create_table(
        "placement_aggregates", *_stamps(),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid", name="uniq_placement_aggregates0uuid"),
    )
    _external("projects", "external_id", sa.String(255))
    op.create_table(
        "resource_classes", *_stamps(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", name="uniq_resource_classes0name"),
    )
    op.create_table(
        "resource_provider_aggregates", *_stamps(),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("resource_provider_id", "aggregate_id"),
    )
    op.create_index("resource_provider_aggregates_aggregate_id_idx",
                    "resource_provider_aggregates", ["aggregate_id"])
    op.create_table(
        "resource_providers", *_stamps(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.Unicode(200), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=True),
        sa.Column("root_provider_id", sa.Integer(), nullable=True),
        sa.Column("parent_provider_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(["parent_provider_id"], ["resource_providers.id"]),
        sa.ForeignKeyConstraint(["root_provider_id"], ["resource_providers.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", name="uniq_resource_providers0name"),
        sa.UniqueConstraint("uuid", name="uniq_resource_providers0uuid"),
    )
    op.create_index("resource_providers_parent_provider_id_idx", "resource_providers",
                    ["parent_provider_id"])
    op.create_index("resource_providers_root_provider_id_idx", "resource_providers",
                    ["root_provider_id"])
    _external("traits", "name", sa.Unicode(255))
    _external("users", "external_id", sa.String(255))
    op.create_table(
        "resource_provider_traits", *_stamps(),
        sa.Column("trait_id", sa.Integer(), nullable=False),
        sa.Column("resource_provider_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["resource_provider_id"], ["resource_providers.id"]),
        sa.ForeignKeyConstraint(["trait_id"], ["traits.id"]),
        sa.PrimaryKeyConstraint("trait_id", "resource_provider_id"),
    )
    op.create_index("resource_provider_traits_resource_provider_trait_idx",
                    "resource_provider_traits", ["resource_provider_id", "trait_id"])


def downgrade() -> None:
    raise RuntimeError("allotment never removes upstream Placement's tables "
                       "(revision a082b8bb98d0)")
