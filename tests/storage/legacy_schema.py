"""The schema of an earlier allotment (its revisions 0001-0004), before it
took upstream Placement's as its own: databases made then are converted by
``db sync`` (allotment/storage/legacy.py).  Tests build such a database
from these tables."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=False), nullable=True),
    ]


resource_classes = sa.Table(
    "resource_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *_timestamps(),
)

traits = sa.Table(
    "traits",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *_timestamps(),
)

resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.Unicode(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    # Nullable only while a row is being inserted: a root points at itself.
    sa.Column("root_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id"), nullable=True, index=True),
    sa.Column("parent_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id"), nullable=True, index=True),
    *_timestamps(),
)

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"),
              nullable=False),
    sa.Column("resource_class_id", sa.Integer,
              sa.ForeignKey("resource_classes.id"), nullable=False, index=True),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id"),
    *_timestamps(),
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    *_timestamps(),
)

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates",
    metadata,
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("aggregate_id", sa.Integer,
              sa.ForeignKey("placement_aggregates.id"), primary_key=True,
              index=True),
    *_timestamps(),
)

resource_provider_traits = sa.Table(
    "resource_provider_traits",
    metadata,
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id", ondelete="CASCADE"),
              primary_key=True),
    sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"),
              primary_key=True, index=True),
    *_timestamps(),
)

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", sa.String(255), nullable=False, unique=True),
    *_timestamps(),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("external_id", sa.String(255), nullable=False, unique=True),
    *_timestamps(),
)

consumer_types = sa.Table(
    "consumer_types",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    *_timestamps(),
)

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"),
              nullable=False, index=True),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"),
              nullable=False, index=True),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    # NULL means the consumer predates consumer types ("unknown").
    sa.Column("consumer_type_id", sa.Integer,
              sa.ForeignKey("consumer_types.id"), nullable=True),
    *_timestamps(),
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer,
              sa.ForeignKey("resource_providers.id"), nullable=False),
    sa.Column("consumer_id", sa.Integer,
              sa.ForeignKey("consumers.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("resource_class_id", sa.Integer,
              sa.ForeignKey("resource_classes.id"), nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    sa.Index("ix_allocations_provider_class", "resource_provider_id",
             "resource_class_id"),
    *_timestamps(),
)

# The change feed (see storage/feed.py): one row per write transaction.
placement_changes = sa.Table(
    "placement_changes",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
              primary_key=True, autoincrement=True),
    sa.Column("created_at", sa.DateTime(timezone=False), nullable=False, index=True),
    sa.Column("data", sa.Text, nullable=False),
    sqlite_autoincrement=True,
)

# One row (id 1): rows of the feed below this id may have been pruned.
placement_feed_state = sa.Table(
    "placement_feed_state",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("pruned_below", sa.BigInteger, nullable=False, server_default="0"),
)


def build(engine: sa.Engine) -> None:
    """An empty database as that allotment left it at its revision 0004."""
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.insert(placement_feed_state).values(id=1, pruned_below=0))
        conn.exec_driver_sql("CREATE TABLE alembic_version (version_num VARCHAR(32) "
                             "NOT NULL PRIMARY KEY)")
        conn.exec_driver_sql("INSERT INTO alembic_version VALUES ('0004')")
