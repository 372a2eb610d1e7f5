"""Latency of GET /allocation_candidates through the WSGI app, on real databases.

Run: ``.venv/bin/python benchmarks/http_bench.py [--hosts 1000 10000]
[--backends sqlite postgresql] [--pg-url URL] [--repeat 7]``.  The
PostgreSQL URL defaults to ``ALLOTMENT_TEST_PG_URL``; a scratch database is
created on that server and dropped afterwards.

Each world mixes the three shapes the scheduler meets: flat compute hosts
(half with AVX2), NUMA hosts (host -> 2 NUMA nodes -> 2 PFs + 1 GPU each) and
diskless hosts using shared storage pools (one per 100 hosts).  A third of
the flat hosts carry a server's allocations.  The world is written through
multi-row INSERTs (noting a reset in the change feed, so every process reloads) and
allocations through the allocations service; the queries go through the full WSGI stack.  Prints
median and p95 in milliseconds; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa
import webob

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment import conf as conf_mod
from allotment.server.app import create_app
from allotment.service import allocations as alloc_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import feed, provider_traits, tables
from allotment.storage import resource_providers as providers
from allotment.storage import traits as trait_store
from allotment.storage.clock import utcnow
from allotment.storage.db import Database, create_engine, normalise_url

_NS = uuid.UUID("6f0e3c52-9d43-4a51-8d0c-6a3b8f1d2e11")
PROJECT, USER = "bench-project", "bench-user"


def _uuid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


# -- the world ------------------------------------------------------------

def _host_specs(hosts: int):
    """(name, parent, inventories, traits, aggregates) per provider, host by host."""
    flat = hosts // 2
    nested = hosts * 3 // 10
    pools = max(1, hosts // 100)
    for s in range(pools):
        yield [(f"ss{s}", None, {"DISK_GB": {"total": 100000}},
                ["MISC_SHARES_VIA_AGGREGATE"], [_uuid(f"agg{s}")])]
    for h in range(hosts):
        cn = f"cn{h}"
        if h < flat:
            yield [(cn, None, {
                "VCPU": {"total": 64, "allocation_ratio": 4.0},
                "MEMORY_MB": {"total": 262144, "reserved": 512},
                "DISK_GB": {"total": 2000}},
                ["HW_CPU_X86_AVX2"] if h % 2 else [], [])]
        elif h < flat + nested:
            tree = [(cn, None, {"DISK_GB": {"total": 2000}},
                     ["COMPUTE_VOLUME_MULTI_ATTACH"], [])]
            for n in range(2):
                numa = f"{cn}_numa{n}"
                tree.append((numa, cn, {"VCPU": {"total": 32},
                                        "MEMORY_MB": {"total": 131072}},
                             ["HW_NUMA_ROOT"], []))
                for p in range(2):
                    tree.append((f"{numa}_pf{p}", numa, {"SRIOV_NET_VF": {"total": 8}},
                                 [f"CUSTOM_PHYSNET{p}"], []))
                tree.append((f"{numa}_gpu", numa, {"VGPU": {"total": 4}}, [], []))
            yield tree
        else:
            yield [(cn, None, {"VCPU": {"total": 64, "allocation_ratio": 4.0},
                               "MEMORY_MB": {"total": 262144}},
                    [], [_uuid(f"agg{h % pools}")])]


def build_world(db: Database, hosts: int) -> int:
    """Write the world; returns the number of providers.

    Providers, inventories, traits and aggregates go in with one multi-row
    INSERT per table and batch (the per-provider service calls would take
    far longer than the measurements), then a reset is noted in the change
    feed so that every process reloads its world.
    """
    now = utcnow()
    with db.write() as conn:
        for name in ("CUSTOM_PHYSNET0", "CUSTOM_PHYSNET1"):
            if trait_store.get(conn, name) is None:
                trait_store.create(conn, name)
        trait_ids = dict(conn.execute(
            sa.select(tables.traits.c.name, tables.traits.c.id)).all())
        class_ids = dict(conn.execute(
            sa.select(tables.resource_classes.c.name, tables.resource_classes.c.id)).all())
    ids: dict[str, int] = {}
    roots: dict[str, int] = {}
    agg_ids: dict[str, int] = {}
    specs = [p for tree in _host_specs(hosts) for p in tree]
    for start in range(0, len(specs), 5000):
        chunk = specs[start:start + 5000]
        rps, invs, trs, links, new_aggs = [], [], [], [], []
        for name, parent, inv, traits, aggs in chunk:
            pid = ids[name] = len(ids) + 1
            roots[name] = roots[parent] if parent else pid
            rps.append({"id": pid, "uuid": _uuid(name), "name": name, "generation": 0,
                        "parent_provider_id": ids[parent] if parent else None,
                        "root_provider_id": roots[name], "created_at": now})
            for rc, fields in inv.items():
                invs.append({"resource_provider_id": pid, "resource_class_id": class_ids[rc],
                             "total": fields["total"], "reserved": fields.get("reserved", 0),
                             "min_unit": 1, "max_unit": fields["total"], "step_size": 1,
                             "allocation_ratio": fields.get("allocation_ratio", 1.0),
                             "created_at": now})
            trs.extend({"resource_provider_id": pid, "trait_id": trait_ids[t],
                        "created_at": now} for t in traits)
            for agg in aggs:
                if agg not in agg_ids:
                    agg_ids[agg] = len(agg_ids) + 1
                    new_aggs.append({"id": agg_ids[agg], "uuid": agg, "created_at": now})
                links.append({"resource_provider_id": pid, "aggregate_id": agg_ids[agg],
                              "created_at": now})
        with db.write() as conn:
            for table, rows in ((tables.resource_providers, rps),
                                (tables.inventories, invs),
                                (tables.resource_provider_traits, trs),
                                (tables.placement_aggregates, new_aggs),
                                (tables.resource_provider_aggregates, links)):
                if rows:
                    conn.execute(sa.insert(table), rows)
            feed.note_reset(conn)
    if db.backend == "postgresql":
        with db.write() as conn:
            for table in ("resource_providers", "placement_aggregates"):
                conn.execute(sa.text(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"))
    count = len(specs)

    # A server on every third flat host.
    claims = [
        alloc_service.ConsumerAllocations(
            ConsumerRequest(uuid=_uuid(f"vm{h}"), project_id=PROJECT, user_id=USER),
            {_uuid(f"cn{h}"): {"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 100}})
        for h in range(0, hosts // 2, 3)]
    for start in range(0, len(claims), 500):
        alloc_service.replace_many(db, claims[start:start + 500], attempts=3)
    return count


# -- the queries ----------------------------------------------------------

QUERIES = [
    ("VCPU,MEM,DISK (all shapes)", "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"),
    ("+ required AVX2", "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"
                        "&required=HW_CPU_X86_AVX2"),
    ("+ root_required !MULTI_ATTACH", "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"
                                      "&root_required=!COMPUTE_VOLUME_MULTI_ATTACH"),
    ("NUMA-affine VCPU+VGPU+VF", "resources=DISK_GB:20&resources_C=VCPU:2,MEMORY_MB:4096"
                                 "&resources_G=VGPU:1&resources_N=SRIOV_NET_VF:1"
                                 "&group_policy=none&same_subtree=_C,_G,_N"),
]


def get(app, query: str) -> tuple[int, int]:
    req = webob.Request.blank(f"/allocation_candidates?{query}")
    req.headers["OpenStack-API-Version"] = "placement 1.39"
    req.headers["X-Auth-Token"] = "admin"
    resp = req.get_response(app)
    if resp.status_code != 200:
        raise SystemExit(f"{query}: {resp.status} {resp.text[:300]}")
    return len(resp.json["allocation_requests"]), len(resp.body)


def measure(app, query: str, repeat: int) -> tuple[float, float, int, int]:
    times = []
    count = size = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count, size = get(app, query)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95, count, size


# -- databases ------------------------------------------------------------

def _scratch_pg(url: str) -> tuple[str, object]:
    name = f"allotment_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(normalise_url(url), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    scratch = sa.engine.make_url(normalise_url(url)).set(database=name)
    return scratch.render_as_string(hide_password=False), drop


def run(backend: str, url: str, hosts: int, repeat: int) -> None:
    conf = conf_mod.load(config_files=[], overrides={
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": url, "sync_on_startup": True}})
    db = Database(create_engine(url, conf=conf))
    app = create_app(conf, db=db)
    start = time.perf_counter()
    count = build_world(db, hosts)
    print(f"# {backend} {hosts} hosts: {count} providers written in "
          f"{time.perf_counter() - start:.1f} s")
    for label, query in QUERIES:
        for limit in (1000, None):
            q = query if limit is None else f"{query}&limit={limit}"
            reps = repeat if limit is not None else max(3, repeat // 2)
            median, p95, n, size = measure(app, q, reps)
            print(f"{backend:10} {hosts:>6} {label:32} {limit or '-':>5} "
                  f"{median:>9.1f} {p95:>9.1f} {n:>7} {size / 1e6:>7.2f}")
    # The first answer after a topology change reloads the static world.
    first = time.perf_counter()
    with db.write() as conn:
        row = providers.get_by_uuid(conn, _uuid("cn0"))
        # cn0 has no traits: giving it one changes the topology.
        avx2 = trait_store.get(conn, "HW_CPU_X86_AVX2").id
        provider_traits.replace(conn, row.id, [avx2])
    get(app, QUERIES[0][1] + "&limit=1000")
    print(f"# {backend} {hosts}: first answer after a topology change "
          f"{(time.perf_counter() - first) * 1000:.0f} ms")
    db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--pg-url", default=os.environ.get("ALLOTMENT_TEST_PG_URL"))
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"{'backend':10} {'hosts':>6} {'query':32} {'limit':>5} {'median ms':>9} "
          f"{'p95 ms':>9} {'results':>7} {'MB':>7}")
    for backend in args.backends:
        for hosts in args.hosts:
            if backend == "sqlite":
                with tempfile.TemporaryDirectory() as tmp:
                    run(backend, f"sqlite:///{tmp}/bench.sqlite", hosts, args.repeat)
            elif args.pg_url:
                url, drop = _scratch_pg(args.pg_url)
                try:
                    run(backend, url, hosts, args.repeat)
                finally:
                    drop()
            else:
                print("# postgresql skipped: no --pg-url or ALLOTMENT_TEST_PG_URL")


if __name__ == "__main__":
    main()
