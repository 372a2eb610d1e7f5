"""Initial schema: providers, inventories, traits, aggregates, consumers, allocations.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _stamps() -> list[sa.Column]:
    return [sa.Column("created_at", sa.DateTime(), nullable=False),
            sa.Column("updated_at", sa.DateTime(), nullable=True)]


def _named(table: str) -> None:
    """A table of unique names (resource classes, traits, consumer types)."""
    op.create_table(
        table,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
        sa.UniqueConstraint("name", name=f"uq_{table}_name"),
    )


def _external(table: str) -> None:
    """A table mapping external identifiers (projects, users) to ids."""
    op.create_table(
        table,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("external_id", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
        sa.UniqueConstraint("external_id", name=f"uq_{table}_external_id"),
    )


def _fk(column: str, target: str, table: str, ondelete: str | None = None):
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}",
        ondelete=ondelete)


def upgrade() -> None:
    _named("resource_classes")
    _named("traits")
    _named("consumer_types")
    _external("projects")
    _external("users")

    op.create_table(
        "resource_providers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.Unicode(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("root_provider_id", sa.Integer, nullable=True),
        sa.Column("parent_provider_id", sa.Integer, nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_resource_providers"),
        sa.UniqueConstraint("uuid", name="uq_resource_providers_uuid"),
        sa.UniqueConstraint("name", name="uq_resource_providers_name"),
        _fk("root_provider_id", "resource_providers", "resource_providers"),
        _fk("parent_provider_id", "resource_providers", "resource_providers"),
    )
    op.create_index("ix_resource_providers_root_provider_id",
                    "resource_providers", ["root_provider_id"])
    op.create_index("ix_resource_providers_parent_provider_id",
                    "resource_providers", ["parent_provider_id"])

    op.create_table(
        "inventories",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("reserved", sa.Integer, nullable=False),
        sa.Column("min_unit", sa.Integer, nullable=False),
        sa.Column("max_unit", sa.Integer, nullable=False),
        sa.Column("step_size", sa.Integer, nullable=False),
        sa.Column("allocation_ratio", sa.Float, nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_inventories"),
        sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                            name="uq_inventories_resource_provider_id_resource_class_id"),
        _fk("resource_provider_id", "resource_providers", "inventories", "CASCADE"),
        _fk("resource_class_id", "resource_classes", "inventories"),
    )
    op.create_index("ix_inventories_resource_class_id", "inventories",
                    ["resource_class_id"])

    op.create_table(
        "placement_aggregates",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_placement_aggregates"),
        sa.UniqueConstraint("uuid", name="uq_placement_aggregates_uuid"),
    )

    for table, column, target in (
        ("resource_provider_aggregates", "aggregate_id", "placement_aggregates"),
        ("resource_provider_traits", "trait_id", "traits"),
    ):
        op.create_table(
            table,
            sa.Column("resource_provider_id", sa.Integer, nullable=False),
            sa.Column(column, sa.Integer, nullable=False),
            *_stamps(),
            sa.PrimaryKeyConstraint("resource_provider_id", column, name=f"pk_{table}"),
            _fk("resource_provider_id", "resource_providers", table, "CASCADE"),
            _fk(column, target, table),
        )
        op.create_index(f"ix_{table}_{column}", table, [column])

    op.create_table(
        "consumers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.Integer, nullable=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("consumer_type_id", sa.Integer, nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_consumers"),
        sa.UniqueConstraint("uuid", name="uq_consumers_uuid"),
        _fk("project_id", "projects", "consumers"),
        _fk("user_id", "users", "consumers"),
        _fk("consumer_type_id", "consumer_types", "consumers"),
    )
    op.create_index("ix_consumers_project_id", "consumers", ["project_id"])
    op.create_index("ix_consumers_user_id", "consumers", ["user_id"])

    op.create_table(
        "allocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("consumer_id", sa.Integer, nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_allocations"),
        _fk("resource_provider_id", "resource_providers", "allocations"),
        _fk("consumer_id", "consumers", "allocations", "CASCADE"),
        _fk("resource_class_id", "resource_classes", "allocations"),
    )
    op.create_index("ix_allocations_consumer_id", "allocations", ["consumer_id"])
    op.create_index("ix_allocations_provider_class", "allocations",
                    ["resource_provider_id", "resource_class_id"])
