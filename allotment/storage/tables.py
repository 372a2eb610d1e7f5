"""The schema, as SQLAlchemy Core tables.

The data tables are upstream Placement's own, exactly as its Alembic history
leaves them at revision ``a082b8bb98d0`` (names of tables, columns,
constraints and indexes included): a database upstream filled is served as
it is, and handed back as it is (see docs/adopting.md).  allotment adds
tables of its own, named ``placement_changes``/``placement_feed_state``
(the change feed) and ``allotment_*``, which upstream never reads.

This module describes the schema the migrations produce; it is never used to
create tables directly (``allotment-manage db sync`` runs Alembic).  A test
checks that the two agree.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

# Custom resource classes are numbered from here; standard ones by their
# place in os_resource_classes.STANDARDS (as upstream numbers them).
FIRST_CUSTOM_CLASS_ID = 10000


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def _names(name: str, column: str, kind: sa.types.TypeEngine, **id_options: bool) -> sa.Table:
    """A table of unique names, each with an integer id: five of upstream's
    tables have this shape, differing in the column's name and type and in
    whether upstream's migrations declare the id ``autoincrement``."""
    return sa.Table(
        name,
        metadata,
        *_timestamps(),
        sa.Column("id", sa.Integer, primary_key=True, **id_options),
        sa.Column(column, kind, nullable=False),
        sa.UniqueConstraint(column, name=f"uniq_{name}0{column}"),
    )


resource_classes = _names("resource_classes", "name", sa.String(255))

traits = _names("traits", "name", sa.Unicode(255), autoincrement=True)

resource_providers = sa.Table(
    "resource_providers",
    metadata,
    *_timestamps(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("uuid", sa.String(36), nullable=False),
    sa.Column("name", sa.Unicode(200), nullable=True),
    sa.Column("generation", sa.Integer, nullable=True),
    # A root points at itself; NULL only while a row is being inserted.
    sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True),
    sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              nullable=True),
    sa.UniqueConstraint("name", name="uniq_resource_providers0name"),
    sa.UniqueConstraint("uuid", name="uniq_resource_providers0uuid"),
    sa.Index("resource_providers_parent_provider_id_idx", "parent_provider_id"),
    sa.Index("resource_providers_root_provider_id_idx", "root_provider_id"),
)

inventories = sa.Table(
    "inventories",
    metadata,
    *_timestamps(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.Column("resource_class_id", sa.Integer, nullable=False),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id",
                        name="uniq_inventories0resource_provider_resource_class"),
    sa.Index("inventories_resource_class_id_idx", "resource_class_id"),
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    *_timestamps(),
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=True),
    sa.UniqueConstraint("uuid", name="uniq_placement_aggregates0uuid"),
)

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates",
    metadata,
    *_timestamps(),
    sa.Column("resource_provider_id", sa.Integer, primary_key=True),
    sa.Column("aggregate_id", sa.Integer, primary_key=True),
    sa.Index("resource_provider_aggregates_aggregate_id_idx", "aggregate_id"),
)

resource_provider_traits = sa.Table(
    "resource_provider_traits",
    metadata,
    *_timestamps(),
    sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True),
    sa.Column("resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"),
              primary_key=True),
    sa.Index("resource_provider_traits_resource_provider_trait_idx",
             "resource_provider_id", "trait_id"),
)

projects = _names("projects", "external_id", sa.String(255), autoincrement=True)

users = _names("users", "external_id", sa.String(255), autoincrement=True)

consumer_types = _names("consumer_types", "name", sa.Unicode(255), autoincrement=True)

consumers = sa.Table(
    "consumers",
    metadata,
    *_timestamps(),
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False),
    sa.Column("project_id", sa.Integer, nullable=False),
    sa.Column("user_id", sa.Integer, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default=sa.text("0")),
    # NULL means the consumer predates consumer types ("unknown").
    sa.Column("consumer_type_id", sa.Integer,
              sa.ForeignKey("consumer_types.id", name="consumers_consumer_type_id_fkey"),
              nullable=True),
    sa.UniqueConstraint("uuid", name="uniq_consumers0uuid"),
    sa.Index("consumers_project_id_user_id_uuid_idx", "project_id", "user_id", "uuid"),
    sa.Index("consumers_project_id_uuid_idx", "project_id", "uuid"),
    sa.Index("consumers_consumer_type_id_idx", "consumer_type_id"),
)

allocations = sa.Table(
    "allocations",
    metadata,
    *_timestamps(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    # The consumer's UUID (consumers.uuid), not its id: upstream's key.
    sa.Column("consumer_id", sa.String(36), nullable=False),
    sa.Column("resource_class_id", sa.Integer, nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    sa.Index("allocations_resource_provider_class_used_idx",
             "resource_provider_id", "resource_class_id", "used"),
    sa.Index("allocations_resource_class_id_idx", "resource_class_id"),
    sa.Index("allocations_consumer_id_idx", "consumer_id"),
)

# The tables above, as upstream names them: what adoption finds and hand-back leaves.
UPSTREAM_TABLES = tuple(metadata.sorted_tables)

# -- allotment's own ----------------------------------------------------------

# The change feed (see storage/feed.py): one row per write transaction.
placement_changes = sa.Table(
    "placement_changes",
    metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
              primary_key=True, autoincrement=True),
    sa.Column("created_at", sa.DateTime(timezone=False), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    # Random per row (storage/feed.py, Position); the server draws it for
    # writers that do not (a default on PostgreSQL and MySQL), NULL in rows
    # older than the column.
    sa.Column("stamp", sa.BigInteger, nullable=True),
    sa.Index("ix_placement_changes_created_at", "created_at"),
    sqlite_autoincrement=True,
)

# One row (id 1): rows of the feed below this id may have been pruned.
placement_feed_state = sa.Table(
    "placement_feed_state",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("pruned_below", sa.BigInteger, nullable=False, server_default="0"),
)

# PostgreSQL only, UNLOGGED: one row (id 1) whose token changes whenever
# the server comes back from a crash or a replica is promoted (emptied, then
# set again by the first reader; storage/feed.py, Position).
allotment_epoch = sa.Table(
    "allotment_epoch",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("token", sa.BigInteger, nullable=False),
    prefixes=["UNLOGGED"],
)

# On SQLite, a row here while an allotment process writes: the triggers that
# report other writers' changes to the feed stay quiet (storage/foreign.py).
allotment_writer = sa.Table(
    "allotment_writer",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
)

# On MySQL, the collation each upstream table had before allotment took the
# database over, restored when it is handed back.
allotment_adoption = sa.Table(
    "allotment_adoption",
    metadata,
    sa.Column("table_name", sa.String(64), primary_key=True),
    sa.Column("original_collation", sa.String(64), nullable=False),
)
