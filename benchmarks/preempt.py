"""Cost of ``preempt=true`` (docs/extensions/preempt.md) next to the same
candidates request without it.

Run: ``.venv/bin/python benchmarks/preempt.py [--hosts 1000] [--repeat 21]
[--backend sqlite|postgresql] [--pg-url URL]``.  Asserts nothing; prints
the p50 and p95 in milliseconds of
``resources=VCPU:10,MEMORY_MB:10240,DISK_GB:10&limit=1000`` with the
extension header, without and with ``preempt=true`` (asked alternately,
through the whole WSGI stack), how many candidates each answers, and the
ratio of the p50s.  The target: at most 2.

The world: NUMA hosts (root with disk, 2 NUMA nodes of 128 VCPU and
131072 MB, PFs and a GPU under each; benchmarks/side_by_side/worlds.py),
each node holding 10 consumers.  Node 0 of every host and node 1 of every
even host are full for the request (10 x 12 VCPU, 10 x 12288 MB); node 1 of
odd hosts holds 10 x 4 VCPU, 10 x 4096 MB.  3 consumers of each node
(30% of the usage) are of type SPOT, listed in
``[allotment] preemptible_consumer_types``: without preemption only the
odd hosts' node 1 fits (half of the 1000 candidates asked for), and the
other half of the answer needs an eviction each, on as many nodes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
import webob

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment import conf as conf_mod
from allotment.server.app import create_app
from allotment.service import allocations as alloc_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import feed, tables
from allotment.storage import traits as trait_store
from allotment.storage.clock import utcnow
from allotment.storage.db import Database, create_engine
from benchmarks.http_bench import _scratch_pg
from benchmarks.side_by_side.worlds import numa, uid

PROJECT, USER = "bench-project", "bench-user"
QUERY = "resources=VCPU:10,MEMORY_MB:10240,DISK_GB:10&limit=1000"
PER_NODE = 10
PREEMPTIBLE_PER_NODE = 3


def write_topology(db: Database, hosts: int) -> list[list[str]]:
    """The NUMA world's providers, in bulk; per host, its root and nodes."""
    world = numa(hosts)
    now = utcnow()
    with db.write() as conn:
        for name in world.custom_traits:
            if trait_store.get(conn, name) is None:
                trait_store.create(conn, name)
        trait_ids = dict(conn.execute(sa.select(tables.traits.c.name, tables.traits.c.id)).all())
        class_ids = dict(conn.execute(
            sa.select(tables.resource_classes.c.name, tables.resource_classes.c.id)).all())
    ids: dict[str, int] = {}
    layout = []
    rps, invs, trs = [], [], []
    for tree in world.trees:
        layout.append([tree[0].uuid] + [p.uuid for p in tree if "VCPU" in p.inventories])
        for p in tree:
            pid = ids[p.name] = len(ids) + 1
            rps.append({"id": pid, "uuid": p.uuid, "name": p.name, "generation": 0,
                        "parent_provider_id": ids[p.parent] if p.parent else None,
                        "root_provider_id": ids[tree[0].name], "created_at": now})
            for rc, inv in p.inventories.items():
                invs.append({"resource_provider_id": pid, "resource_class_id": class_ids[rc],
                             "total": inv["total"], "reserved": inv.get("reserved", 0),
                             "min_unit": 1, "max_unit": inv["total"], "step_size": 1,
                             "allocation_ratio": inv.get("allocation_ratio", 1.0),
                             "created_at": now})
            trs.extend({"resource_provider_id": pid, "trait_id": trait_ids[t],
                        "created_at": now} for t in p.traits)
    with db.write() as conn:
        for table, rows in ((tables.resource_providers, rps), (tables.inventories, invs),
                            (tables.resource_provider_traits, trs)):
            for i in range(0, len(rows), 5000):
                conn.execute(sa.insert(table), rows[i:i + 5000])
        feed.note_reset(conn)
    if db.backend == "postgresql":
        with db.write() as conn:
            conn.execute(sa.text(
                "SELECT setval(pg_get_serial_sequence('resource_providers', 'id'), "
                "(SELECT max(id) FROM resource_providers))"))
    return layout


def write_consumers(db: Database, layout: list[list[str]]) -> int:
    """The consumers of the module docstring, through the allocations
    service; returns how many."""
    claims = []
    for h, (root, *nodes) in enumerate(layout):
        for n, node in enumerate(nodes):
            full = n == 0 or h % 2 == 0
            vcpu, mem = (12, 12288) if full else (4, 4096)
            for c in range(PER_NODE):
                kind = "SPOT" if c < PREEMPTIBLE_PER_NODE else "INSTANCE"
                claims.append(alloc_service.ConsumerAllocations(
                    ConsumerRequest(uuid=uid(f"preempt-{h}-{n}-{c}"), project_id=PROJECT,
                                    user_id=USER, consumer_type=kind),
                    {node: {"VCPU": vcpu, "MEMORY_MB": mem}, root: {"DISK_GB": 10}}))
    for i in range(0, len(claims), 1000):
        alloc_service.replace_many(db, claims[i:i + 1000], attempts=3)
    return len(claims)


def get(app, query: str) -> tuple[float, int, int]:
    """(milliseconds, candidates, candidates with evictions)."""
    req = webob.Request.blank(f"/allocation_candidates?{query}")
    req.headers["OpenStack-API-Version"] = "placement 1.39"
    req.headers["Allotment-Extensions"] = "1"
    req.headers["X-Auth-Token"] = "admin"
    start = time.perf_counter()
    resp = req.get_response(app)
    took = (time.perf_counter() - start) * 1000
    if resp.status_code != 200:
        raise SystemExit(f"{query}: {resp.status} {resp.text[:300]}")
    found = resp.json["allocation_requests"]
    return took, len(found), sum(1 for ar in found if ar.get("evicts"))


def p(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(backend: str, url: str, hosts: int, repeat: int) -> None:
    conf = conf_mod.load(config_files=[], overrides={
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": url, "sync_on_startup": True},
        "allotment": {"preemptible_consumer_types": ["SPOT"]}})
    db = Database(create_engine(url, conf=conf))
    app = create_app(conf, db=db)
    start = time.perf_counter()
    layout = write_topology(db, hosts)
    consumers = write_consumers(db, layout)
    print(f"# {backend}: {hosts} NUMA hosts, {consumers} consumers "
          f"({consumers * PREEMPTIBLE_PER_NODE // PER_NODE} SPOT) written in "
          f"{time.perf_counter() - start:.1f} s; load average {os.getloadavg()[0]:.1f}")
    plain, preempt = QUERY, QUERY + "&preempt=true"
    for query in (plain, preempt):  # warm: the world is loaded, caches filled
        get(app, query)
    times: dict[str, list[float]] = {plain: [], preempt: []}
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(repeat):
        for query in (plain, preempt):
            took, n, evicting = get(app, query)
            times[query].append(took)
            counts[query] = (n, evicting)
    print(f"{'request':44} {'p50 ms':>8} {'p95 ms':>8} {'answers':>8} {'evicting':>9}")
    for label, query in (("limit=1000", plain), ("limit=1000&preempt=true", preempt)):
        n, evicting = counts[query]
        print(f"{label:44} {statistics.median(times[query]):>8.1f} "
              f"{p(times[query], 0.95):>8.1f} {n:>8} {evicting:>9}")
    ratio = statistics.median(times[preempt]) / statistics.median(times[plain])
    print(f"ratio of p50s (target at most 2): {ratio:.2f}; "
          f"load average {os.getloadavg()[0]:.1f}")
    # After a write, what is kept is read again only where the world moved.
    after = []
    for k in range(max(3, repeat // 3)):
        root, node = layout[k][0], layout[k][1]
        alloc_service.replace_many(db, [alloc_service.ConsumerAllocations(
            ConsumerRequest(uuid=uid(f"preempt-{k}-0-0"), project_id=PROJECT, user_id=USER,
                            consumer_type="SPOT"),
            {node: {"VCPU": 11 - k % 2, "MEMORY_MB": 12288}, root: {"DISK_GB": 10}})],
            attempts=3)
        after.append(get(app, preempt)[0])
    print(f"preempt=true, first answer after a SPOT consumer's write: p50 "
          f"{statistics.median(after):.1f} ms over {len(after)} writes")
    db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("ALLOTMENT_TEST_PG_URL"))
    args = parser.parse_args()
    if args.backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="preempt-bench-") as tmp:
            run("sqlite", f"sqlite:///{tmp}/bench.sqlite", args.hosts, args.repeat)
        return
    if not args.pg_url:
        raise SystemExit("postgresql: no --pg-url or ALLOTMENT_TEST_PG_URL")
    url, drop = _scratch_pg(args.pg_url)
    try:
        run("postgresql", url, args.hosts, args.repeat)
    finally:
        drop()


if __name__ == "__main__":
    main()
