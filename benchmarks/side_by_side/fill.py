"""Filling upstream Placement's schema with a world by SQL, in bulk.

Loading 90,000 providers and 100,000 consumers through the REST API takes
hours; written as rows it takes a minute.  The schema is made by upstream's
own ``placement-manage db sync`` (so upstream finds its database exactly as
it leaves one), then every row is inserted in batches: standard resource
classes numbered by their place in ``os_resource_classes.STANDARDS``, custom
ones from 10000, the standard traits, the world's providers (parents first,
roots pointing at themselves), inventories, traits, aggregates, and
consumers already holding allocations; then planner statistics
(``ANALYZE``).  Upstream serves the result as it is;
allotment serves it after ``allotment-manage db sync`` adopts it.  The same
world fills the same rows every time, so two databases filled alike hold the
same world, ids included.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from pathlib import Path

import os_resource_classes
import os_traits
import sqlalchemy as sa

from allotment.storage import db as db_mod
from allotment.storage import tables as t
from benchmarks.side_by_side.worlds import World, uid

FIRST_CUSTOM_CLASS = 10000
FILL_PROJECT = "bench-fill"
FILL_USER = "bench-fill"
_BATCH = 5000
_STAMP = datetime.datetime(2026, 1, 1)
# What each consumer already in the world holds: from a provider with VCPU
# (round robin over a tree's NUMA nodes), and disk from the tree's first
# provider with disk.
HELD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


@dataclass
class Rows:
    """Every row of a filled world, table by table, in insertion order."""

    tables: dict[str, list[dict]] = field(default_factory=dict)

    def add(self, table: str, row: dict) -> None:
        self.tables.setdefault(table, []).append({"created_at": _STAMP, **row})

    def count(self, table: str) -> int:
        return len(self.tables.get(table, []))


def consumer_uuid(host: int, index: int) -> str:
    return uid(f"fill-consumer-{host}-{index}")


def rows(world: World, consumers_per_host: int) -> Rows:
    """The rows of ``world`` with ``consumers_per_host`` consumers on each host."""
    out = Rows()
    classes = {name: i for i, name in enumerate(os_resource_classes.STANDARDS)}
    for i, name in enumerate(world.custom_classes):
        classes[name] = FIRST_CUSTOM_CLASS + i
    for name, cid in classes.items():
        out.add("resource_classes", {"id": cid, "name": name})
    trait_ids = {}
    for name in [*sorted(os_traits.get_traits()), *world.custom_traits]:
        trait_ids[name] = len(trait_ids) + 1
        out.add("traits", {"id": trait_ids[name], "name": name})
    aggregate_ids: dict[str, int] = {}
    provider_ids: dict[str, int] = {}
    out.add("projects", {"id": 1, "external_id": FILL_PROJECT})
    out.add("users", {"id": 1, "external_id": FILL_USER})
    out.add("consumer_types", {"id": 1, "name": "INSTANCE"})
    for host, tree in enumerate(world.trees):
        for p in tree:
            pid = provider_ids[p.name] = len(provider_ids) + 1
            parent = provider_ids[p.parent] if p.parent else None
            root = provider_ids[tree[0].name]
            out.add("resource_providers", {
                "id": pid, "uuid": p.uuid, "name": p.name, "generation": 1,
                "root_provider_id": root, "parent_provider_id": parent})
            for rc, inv in p.inventories.items():
                out.add("inventories", {
                    "id": out.count("inventories") + 1, "resource_provider_id": pid,
                    "resource_class_id": classes[rc], "total": inv["total"],
                    "reserved": inv.get("reserved", 0), "min_unit": inv.get("min_unit", 1),
                    "max_unit": inv.get("max_unit", inv["total"]),
                    "step_size": inv.get("step_size", 1),
                    "allocation_ratio": inv.get("allocation_ratio", 1.0)})
            for name in p.traits:
                out.add("resource_provider_traits",
                        {"trait_id": trait_ids[name], "resource_provider_id": pid})
            for agg in p.aggregates:
                if agg not in aggregate_ids:
                    aggregate_ids[agg] = len(aggregate_ids) + 1
                    out.add("placement_aggregates", {"id": aggregate_ids[agg], "uuid": agg})
                out.add("resource_provider_aggregates",
                        {"resource_provider_id": pid, "aggregate_id": aggregate_ids[agg]})
        _consumers(out, host, tree, provider_ids, classes, consumers_per_host)
    return out


def _consumers(out: Rows, host: int, tree, provider_ids, classes, count: int) -> None:
    compute = [p for p in tree if "VCPU" in p.inventories]
    disk = next((p for p in tree if "DISK_GB" in p.inventories), None)
    if not compute:
        return
    for j in range(count):
        uuid = consumer_uuid(host, j)
        out.add("consumers", {"id": out.count("consumers") + 1, "uuid": uuid,
                              "project_id": 1, "user_id": 1, "generation": 1,
                              "consumer_type_id": 1})
        node = compute[j % len(compute)]
        held = [(node, "VCPU"), (node, "MEMORY_MB")]
        if disk is not None:
            held.append((disk, "DISK_GB"))
        for provider, rc in held:
            out.add("allocations", {
                "id": out.count("allocations") + 1,
                "resource_provider_id": provider_ids[provider.name],
                "consumer_id": uuid, "resource_class_id": classes[rc], "used": HELD[rc]})


def _existing(conn: sa.Connection, table: sa.Table) -> set[str]:
    return set(conn.execute(sa.select(table.c.name)).scalars())


def insert(database_url: str, filled: Rows) -> float:
    """Insert ``filled`` into an empty upstream schema at ``database_url``; seconds."""
    engine = sa.create_engine(db_mod.normalise_url(database_url))
    start = time.perf_counter()
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "mysql":
                # VCPU is resource class 0: an id MySQL would otherwise
                # replace with the next AUTO_INCREMENT value.
                conn.exec_driver_sql("SET SESSION sql_mode = CONCAT(@@sql_mode, "
                                     "',NO_AUTO_VALUE_ON_ZERO')")
            for name, table_rows in filled.tables.items():
                table = t.metadata.tables[name]
                if name in ("resource_classes", "traits"):
                    # A fresh upstream schema may hold some already (and
                    # upstream numbers standard classes as we do).
                    have = _existing(conn, table)
                    table_rows = [r for r in table_rows if r["name"] not in have]
                for i in range(0, len(table_rows), _BATCH):
                    conn.execute(table.insert(), table_rows[i:i + _BATCH])
            if engine.dialect.name == "postgresql":
                _advance_sequences(conn, filled)
        _analyze(engine, filled)
    finally:
        engine.dispose()
    return time.perf_counter() - start


def _analyze(engine: sa.Engine, filled: Rows) -> None:
    """Planner statistics, as a database that grew by use has them.

    Without them PostgreSQL plans upstream's candidates query on 90,000
    freshly inserted providers as if the tables were empty, and one answer
    takes minutes until autovacuum comes by.
    """
    dialect = engine.dialect.name
    if dialect == "sqlite":
        return  # SQLite keeps no statistics unless asked, filled by use or not
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if dialect == "postgresql":
            conn.exec_driver_sql("ANALYZE")
        else:
            conn.exec_driver_sql("ANALYZE TABLE " + ", ".join(filled.tables))


def _advance_sequences(conn: sa.Connection, filled: Rows) -> None:
    """Rows were inserted with their ids: the next id must come after them."""
    for name in filled.tables:
        if "id" not in t.metadata.tables[name].c:
            continue
        seq = conn.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"),
                           {"t": name}).scalar()
        if seq:
            conn.execute(sa.text(
                f"SELECT setval('{seq}', (SELECT COALESCE(MAX(id), 1) FROM {name}))"))


def fill(database_url: str, filled: Rows, workdir: Path) -> float:
    """Make upstream's schema at ``database_url`` (upstream's own ``db sync``,
    run in ``workdir``) and insert ``filled``; seconds spent inserting."""
    from tests.harness.servers import upstream_manage

    upstream_manage(database_url, workdir, "db", "sync")
    return insert(database_url, filled)
