"""Fill upstream Placement 16.0.0's schema with a cloud, by SQL.

The schema must already be there, made by upstream's own
``placement-manage db sync``; this only adds rows, in bulk INSERTs of the
tables as the database reflects them, the way upstream itself stores them:
standard resource classes with their index in ``os_resource_classes.STANDARDS``
as id and custom ones from id 10000, the standard classes and traits written
as upstream writes them when its API starts,
``allocations.consumer_id`` the consumer's UUID, every provider's root and
parent by id.

One host is a root with DISK_GB, two NUMA nodes with VCPU and MEMORY_MB, and
three PFs per NUMA node with SRIOV_NET_VF: nine providers.  Every hundredth
host also has an FPGA (a custom class) under its first NUMA node.  Hosts sit
in aggregates of ``AGGREGATE_SIZE``, each with a shared disk pool.  Each
host holds ``consumers_per_host`` consumers (VCPU and MEMORY_MB on a NUMA
node, DISK_GB on the root or the pool, a VF on a PF).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import os_resource_classes
import os_traits
import sqlalchemy as sa

BATCH = 5000
AGGREGATE_SIZE = 100
CUSTOM_CLASS_BASE = 10000
CUSTOM_CLASSES = ("CUSTOM_FPGA", "CUSTOM_LICENSE")
CUSTOM_TRAITS = ("CUSTOM_PHYSNET_A", "CUSTOM_PHYSNET_B", "CUSTOM_RACK_A", "CUSTOM_RACK_B")
_NS = uuid.UUID("5b0f1e0a-7c3d-4a8e-b3f2-9e1d2c3b4a59")
_STAMP = dt.datetime(2025, 1, 2, 3, 4, 5)


def _uuid(kind: str, n: int) -> str:
    return str(uuid.uuid5(_NS, f"{kind}-{n}"))


def _class_id(name: str) -> int:
    if name.startswith("CUSTOM_"):
        return CUSTOM_CLASS_BASE + CUSTOM_CLASSES.index(name)
    return os_resource_classes.STANDARDS.index(name)


@dataclass
class Filled:
    hosts: int
    providers: int = 0
    consumers: int = 0
    rows: int = 0


def _insert(conn: sa.Connection, table: sa.Table, rows: Iterator[dict], filled: Filled) -> None:
    batch: list[dict] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            conn.execute(table.insert(), batch)
            filled.rows += len(batch)
            batch = []
    if batch:
        conn.execute(table.insert(), batch)
        filled.rows += len(batch)


class _Ids:
    """Explicit ids, so children name their parents without reading back."""

    def __init__(self, hosts: int) -> None:
        self.hosts = hosts
        self.pools = (hosts + AGGREGATE_SIZE - 1) // AGGREGATE_SIZE

    @staticmethod
    def host(h: int) -> dict[str, int]:
        base = h * 10 + 1
        ids = {"root": base, "numa0": base + 1, "numa1": base + 2}
        for n in range(2):
            for p in range(3):
                ids[f"pf{n}{p}"] = base + 3 + 3 * n + p
        ids["fpga"] = base + 9
        return ids

    def pool(self, a: int) -> int:
        return self.hosts * 10 + 1 + a


def _providers(ids: _Ids, filled: Filled) -> Iterator[dict]:
    for h in range(ids.hosts):
        host = ids.host(h)
        root = host["root"]
        names = [("root", f"compute-{h:05d}", None)]
        names += [(f"numa{n}", f"compute-{h:05d}_NUMA{n}", root) for n in range(2)]
        names += [(f"pf{n}{p}", f"compute-{h:05d}_NUMA{n}_PF{p}", host[f"numa{n}"])
                  for n in range(2) for p in range(3)]
        if h % 100 == 0:
            names.append(("fpga", f"compute-{h:05d}_FPGA", host["numa0"]))
        for key, name, parent in names:
            filled.providers += 1
            yield {"id": host[key], "uuid": _uuid("rp", host[key]), "name": name,
                   "generation": 1 + h % 7, "root_provider_id": root,
                   "parent_provider_id": parent, "created_at": _STAMP, "updated_at": _STAMP}
    for a in range(ids.pools):
        filled.providers += 1
        rp = ids.pool(a)
        yield {"id": rp, "uuid": _uuid("rp", rp), "name": f"disk-pool-{a:03d}", "generation": 3,
               "root_provider_id": rp, "parent_provider_id": None, "created_at": _STAMP,
               "updated_at": None}


def _inventory(inv_id: int, rp: int, rc: str, total: int, **extra) -> dict:
    row = {"id": inv_id, "resource_provider_id": rp, "resource_class_id": _class_id(rc),
           "total": total, "reserved": 0, "min_unit": 1, "max_unit": total, "step_size": 1,
           "allocation_ratio": 1.0, "created_at": _STAMP, "updated_at": None}
    row.update(extra)
    return row


def _inventories(ids: _Ids) -> Iterator[dict]:
    n = 0
    for h in range(ids.hosts):
        host = ids.host(h)
        n += 1
        yield _inventory(n, host["root"], "DISK_GB", 2000, reserved=20)
        for numa in range(2):
            n += 1
            yield _inventory(n, host[f"numa{numa}"], "VCPU", 32, allocation_ratio=4.0,
                             max_unit=32)
            n += 1
            yield _inventory(n, host[f"numa{numa}"], "MEMORY_MB", 262144, reserved=2048)
            for p in range(3):
                n += 1
                yield _inventory(n, host[f"pf{numa}{p}"], "SRIOV_NET_VF", 16, max_unit=4)
        if h % 100 == 0:
            n += 1
            yield _inventory(n, host["fpga"], "CUSTOM_FPGA", 2, max_unit=1)
    for a in range(ids.pools):
        n += 1
        yield _inventory(n, ids.pool(a), "DISK_GB", 100000, max_unit=10000)


def _allocations(ids: _Ids, per_host: int, filled: Filled) -> tuple[list, Iterator[dict]]:
    consumers: list[dict] = []

    def rows() -> Iterator[dict]:
        n = 0
        for h in range(ids.hosts):
            host = ids.host(h)
            for c in range(per_host):
                number = h * per_host + c
                consumer = _uuid("consumer", number)
                consumers.append({"id": number + 1, "uuid": consumer,
                                  "project_id": 1 + number % 1000,
                                  "user_id": 1 + number % 5000,
                                  "generation": 1 + number % 3,
                                  "consumer_type_id": None if number % 10 == 0 else
                                  (2 if number % 10 == 1 else 1),
                                  "created_at": _STAMP, "updated_at": _STAMP})
                numa = host[f"numa{c % 2}"]
                disk = ids.pool(h // AGGREGATE_SIZE) if c % 3 == 0 else host["root"]
                for rp, rc, used in ((numa, "VCPU", 1 + c % 4), (numa, "MEMORY_MB", 2048),
                                     (disk, "DISK_GB", 20),
                                     (host[f"pf{c % 2}{c % 3}"], "SRIOV_NET_VF", 1)):
                    n += 1
                    yield {"id": n, "resource_provider_id": rp, "consumer_id": consumer,
                           "resource_class_id": _class_id(rc), "used": used,
                           "created_at": _STAMP, "updated_at": None}
        filled.consumers = len(consumers)

    return consumers, rows()


def _traits(ids: _Ids, trait_ids: dict[str, int]) -> Iterator[dict]:
    for h in range(ids.hosts):
        host = ids.host(h)
        named = [(host["root"], "HW_CPU_X86_AVX2"), (host["root"], "COMPUTE_VOLUME_MULTI_ATTACH"),
                 (host["root"], "CUSTOM_RACK_A" if h % 2 else "CUSTOM_RACK_B")]
        for n in range(2):
            for p in range(3):
                rp = host[f"pf{n}{p}"]
                named += [(rp, "HW_NIC_SRIOV"), (rp, f"CUSTOM_PHYSNET_{'AB'[n]}")]
        for rp, trait in named:
            yield {"resource_provider_id": rp, "trait_id": trait_ids[trait],
                   "created_at": _STAMP, "updated_at": None}
    for a in range(ids.pools):
        yield {"resource_provider_id": ids.pool(a),
               "trait_id": trait_ids["MISC_SHARES_VIA_AGGREGATE"], "created_at": _STAMP,
               "updated_at": None}


def _aggregates(ids: _Ids) -> Iterator[dict]:
    for h in range(ids.hosts):
        yield {"resource_provider_id": ids.host(h)["root"], "aggregate_id": 1 + h // AGGREGATE_SIZE,
               "created_at": _STAMP, "updated_at": None}
    for a in range(ids.pools):
        yield {"resource_provider_id": ids.pool(a), "aggregate_id": 1 + a,
               "created_at": _STAMP, "updated_at": None}


def _advance_sequences(conn: sa.Connection, meta: sa.MetaData) -> None:
    """PostgreSQL's id sequences past the explicit ids (the others follow
    an explicit id by themselves), so later inserts do not collide."""
    if conn.dialect.name != "postgresql":
        return
    for table in meta.sorted_tables:
        if "id" in table.c and table.c.id.primary_key:
            conn.execute(sa.text(
                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                f"COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1, false)"))


def fill(engine: sa.Engine, hosts: int, consumers_per_host: int = 10) -> Filled:
    """Rows of a cloud of ``hosts`` NUMA hosts in upstream's (empty) schema."""
    meta = sa.MetaData()
    meta.reflect(engine)
    t = meta.tables
    ids = _Ids(hosts)
    filled = Filled(hosts)
    with engine.begin() as conn:
        traits = sorted(set(os_traits.get_traits()) | set(CUSTOM_TRAITS))
        trait_ids = {name: i + 1 for i, name in enumerate(traits)}
        _insert(conn, t["traits"], ({"id": i, "name": name, "created_at": _STAMP,
                                     "updated_at": None} for name, i in trait_ids.items()),
                filled)
        if conn.dialect.name == "mysql":
            # VCPU's id is 0, which MySQL would otherwise take as "the
            # next id".
            conn.execute(sa.text(
                "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')"))
        # The standard classes as upstream writes them when its API starts.
        _insert(conn, t["resource_classes"], (
            {"id": _class_id(name), "name": name, "created_at": _STAMP, "updated_at": None}
            for name in (*os_resource_classes.STANDARDS, *CUSTOM_CLASSES)), filled)
        _insert(conn, t["consumer_types"], (
            {"id": i, "name": name, "created_at": _STAMP, "updated_at": None}
            for i, name in ((1, "INSTANCE"), (2, "MIGRATION"))), filled)
        _insert(conn, t["projects"], ({"id": i, "external_id": _uuid("project", i).replace(
            "-", ""), "created_at": _STAMP, "updated_at": None} for i in range(1, 1001)), filled)
        _insert(conn, t["users"], ({"id": i, "external_id": _uuid("user", i).replace("-", ""),
                                    "created_at": _STAMP, "updated_at": None}
                                   for i in range(1, 5001)), filled)
        _insert(conn, t["placement_aggregates"], (
            {"id": a + 1, "uuid": _uuid("aggregate", a), "created_at": _STAMP, "updated_at": None}
            for a in range(ids.pools)), filled)
        _insert(conn, t["resource_providers"], _providers(ids, filled), filled)
        _insert(conn, t["inventories"], _inventories(ids), filled)
        consumers, allocations = _allocations(ids, consumers_per_host, filled)
        _insert(conn, t["allocations"], allocations, filled)
        _insert(conn, t["consumers"], iter(consumers), filled)
        _insert(conn, t["resource_provider_traits"], _traits(ids, trait_ids), filled)
        _insert(conn, t["resource_provider_aggregates"], _aggregates(ids), filled)
        _advance_sequences(conn, meta)
    return filled
