"""Memory of the in-memory world against the world as plain data.

Run: ``.venv/bin/python benchmarks/world_memory.py [--hosts 10000]
``.

Writes a world into a scratch SQLite database (the shapes of
``benchmarks/http_bench.py``: flat hosts, NUMA hosts with PFs and GPUs,
diskless hosts on shared storage), then measures with ``tracemalloc``:

* *plain data*: every row the world is made of -- providers, inventories,
  traits, aggregate links and usage -- held as one tuple per row, as a
  program would hold them with no index at all;
* *world*: what a process keeps after loading its world
  (``allotment.world.sync.Replica.rebuild``), every index included.

Prints both in MB and their ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment.service import setup
from allotment.storage import migration, tables
from allotment.storage.db import Database, create_engine
from allotment.world.sync import Replica
from benchmarks import http_bench


def _plain_rows(db: Database) -> list:
    """Every row the world is made of, one tuple per row."""
    with db.read() as conn:
        rows = []
        for table in (tables.resource_providers, tables.inventories,
                      tables.resource_provider_traits, tables.resource_provider_aggregates):
            rows.append([tuple(r) for r in conn.execute(sa.select(table))])
        rows.append([tuple(r) for r in conn.execute(
            sa.select(tables.allocations.c.resource_provider_id,
                      tables.allocations.c.resource_class_id,
                      sa.func.sum(tables.allocations.c.used))
            .group_by(tables.allocations.c.resource_provider_id,
                      tables.allocations.c.resource_class_id))])
    return rows


def _retained(build) -> tuple[object, int]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    value = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return value, after - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=10000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(create_engine(f"sqlite:///{tmp}/memory.sqlite"))
        migration.upgrade(db.engine)
        setup.sync_standards(db)
        providers = http_bench.build_world(db, args.hosts)
        plain, plain_bytes = _retained(lambda: _plain_rows(db))
        del plain
        replica, world_bytes = _retained(lambda: _rebuilt(db))
        del replica
        db.dispose()
    print(f"hosts {args.hosts}, providers {providers}")
    print(f"plain data     {plain_bytes / 1e6:8.1f} MB")
    print(f"in-memory world {world_bytes / 1e6:7.1f} MB")
    print(f"ratio           {world_bytes / plain_bytes:7.2f}")


def _rebuilt(db: Database) -> Replica:
    replica = Replica(db)
    replica.rebuild()
    return replica


if __name__ == "__main__":
    main()
