"""Latency of the allocation-candidates engine on big in-memory worlds.

Run: ``.venv/bin/python benchmarks/engine_bench.py [--hosts 1000 10000]
[--repeat 7] [--only flat nested]``.  Asserts nothing; prints, per world:

* ``build``: ``Snapshot.build`` of records without usage (what a service does
  once per topology version), timed apart from making the records;
* ``with_usage``: laying the world's usage over that snapshot (per request);
* a table of query latencies over the overlaid snapshot (median and p95 in
  milliseconds, number of candidates returned).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment.engine import (
    SHARES_TRAIT,
    AllocationCandidatesRequest,
    Inventory,
    ProviderRecord,
    SearchGroup,
    Snapshot,
    find_candidates,
)

_NS = uuid.UUID("2b0c1b40-77a5-4bd9-9e63-5d7a6e2a41f0")


def _uuid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


def _used(rng: random.Random, total: int) -> int:
    return rng.randint(0, total // 2)


def flat_world(hosts: int, rng: random.Random) -> list[ProviderRecord]:
    return [
        ProviderRecord(uuid=_uuid(f"cn{h}"), name=f"cn{h}", inventories={
            "VCPU": Inventory(total=64, allocation_ratio=4.0, used=_used(rng, 256)),
            "MEMORY_MB": Inventory(total=262144, reserved=512,
                                   used=_used(rng, 262144)),
            "DISK_GB": Inventory(total=2000, used=_used(rng, 2000)),
        }, traits=frozenset({"HW_CPU_X86_AVX2"} if h % 2 else set()))
        for h in range(hosts)
    ]


def nested_world(hosts: int, rng: random.Random) -> list[ProviderRecord]:
    """Host -> 2 NUMA nodes (VCPU, MEMORY_MB) -> 2 PFs (VFs) + 1 GPU (VGPU)."""
    out = []
    for h in range(hosts):
        cn = f"cn{h}"
        out.append(ProviderRecord(uuid=_uuid(cn), name=cn, inventories={
            "DISK_GB": Inventory(total=2000, used=_used(rng, 2000))},
            traits=frozenset({"COMPUTE_VOLUME_MULTI_ATTACH"})))
        for n in range(2):
            numa = f"{cn}_numa{n}"
            out.append(ProviderRecord(
                uuid=_uuid(numa), name=numa, parent_uuid=_uuid(cn),
                traits=frozenset({"HW_NUMA_ROOT"}), inventories={
                    "VCPU": Inventory(total=32, used=_used(rng, 32)),
                    "MEMORY_MB": Inventory(total=131072, used=_used(rng, 131072))}))
            for p in range(2):
                pf = f"{numa}_pf{p}"
                out.append(ProviderRecord(
                    uuid=_uuid(pf), name=pf, parent_uuid=_uuid(numa),
                    traits=frozenset({f"CUSTOM_PHYSNET{p}"}),
                    inventories={"SRIOV_NET_VF": Inventory(total=8, used=_used(rng, 8))}))
            gpu = f"{numa}_gpu"
            out.append(ProviderRecord(
                uuid=_uuid(gpu), name=gpu, parent_uuid=_uuid(numa),
                inventories={"VGPU": Inventory(total=4, used=_used(rng, 4))}))
    return out


def sharing_world(hosts: int, rng: random.Random) -> list[ProviderRecord]:
    """Diskless hosts; one shared storage pool per 100 hosts."""
    out = []
    pools = max(1, hosts // 100)
    for s in range(pools):
        out.append(ProviderRecord(
            uuid=_uuid(f"ss{s}"), name=f"ss{s}",
            inventories={"DISK_GB": Inventory(total=100000, used=_used(rng, 100000))},
            traits=frozenset({SHARES_TRAIT}), aggregates=frozenset({_uuid(f"agg{s}")})))
    for h in range(hosts):
        out.append(ProviderRecord(uuid=_uuid(f"cn{h}"), name=f"cn{h}", inventories={
            "VCPU": Inventory(total=64, allocation_ratio=4.0, used=_used(rng, 256)),
            "MEMORY_MB": Inventory(total=262144, used=_used(rng, 262144)),
        }, aggregates=frozenset({_uuid(f"agg{h % pools}")})))
    return out


def wide_world(hosts: int, rng: random.Random) -> list[ProviderRecord]:
    """Each host has 8 identical GPUs and 8 identical PFs: millions of candidates."""
    out = []
    for h in range(hosts):
        cn = f"cn{h}"
        out.append(ProviderRecord(uuid=_uuid(cn), name=cn, inventories={
            "VCPU": Inventory(total=64), "MEMORY_MB": Inventory(total=262144)}))
        for i in range(8):
            out.append(ProviderRecord(uuid=_uuid(f"{cn}_gpu{i}"), parent_uuid=_uuid(cn),
                                      inventories={"VGPU": Inventory(total=4)}))
            out.append(ProviderRecord(uuid=_uuid(f"{cn}_pf{i}"), parent_uuid=_uuid(cn),
                                      inventories={"SRIOV_NET_VF": Inventory(total=16)}))
    return out


def split_usage(records: list[ProviderRecord]) -> tuple[list[ProviderRecord],
                                                       dict[str, dict[str, int]]]:
    """The records without usage, and their usage the way a service loads it."""
    used: dict[str, dict[str, int]] = {}
    static = []
    for rec in records:
        for rc, inv in rec.inventories.items():
            if inv.used:
                used.setdefault(rec.uuid, {})[rc] = inv.used
        static.append(ProviderRecord(
            uuid=rec.uuid, name=rec.name, parent_uuid=rec.parent_uuid,
            inventories={rc: dataclasses.replace(inv, used=0)
                         for rc, inv in rec.inventories.items()},
            traits=rec.traits, aggregates=rec.aggregates))
    return static, used


def req(*groups: SearchGroup, **kwargs) -> AllocationCandidatesRequest:
    return AllocationCandidatesRequest.for_microversion((1, 39), groups=groups, **kwargs)


def g(suffix: str = "", **resources: int) -> SearchGroup:
    return SearchGroup(suffix=suffix, resources=resources)


SCENARIOS: list[tuple[str, Callable, AllocationCandidatesRequest, list]] = [
    ("flat: VCPU,MEM,DISK", flat_world,
     req(g(VCPU=2, MEMORY_MB=4096, DISK_GB=20)), [1000, None]),
    ("flat: + required AVX2", flat_world,
     req(SearchGroup(resources={"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20},
                      required_traits=(frozenset({"HW_CPU_X86_AVX2"}),))), [1000, None]),
    ("nested: unsuffixed VCPU,MEM,DISK", nested_world,
     req(g(VCPU=2, MEMORY_MB=4096, DISK_GB=20)), [1000, None]),
    ("nested: NUMA-affine VCPU+VGPU+VF", nested_world,
     req(g(DISK_GB=20), g("_C", VCPU=2, MEMORY_MB=4096), g("_G", VGPU=1),
         g("_N", SRIOV_NET_VF=1), group_policy="none",
         same_subtrees=[frozenset({"_C", "_G", "_N"})]), [1000, None]),
    ("sharing: VCPU,MEM + shared DISK", sharing_world,
     req(g(VCPU=2, MEMORY_MB=4096, DISK_GB=20)), [1000, None]),
    ("wide: 2 GPU + 2 VF groups, isolate", wide_world,
     req(g(VCPU=1, MEMORY_MB=1024), g("1", VGPU=1), g("2", VGPU=1),
         g("3", SRIOV_NET_VF=1), g("4", SRIOV_NET_VF=1), group_policy="isolate"),
     [10, 1000]),
    ("wide: 2 GPU + 2 VF groups, none", wide_world,
     req(g(VCPU=1, MEMORY_MB=1024), g("1", VGPU=1), g("2", VGPU=1),
         g("3", SRIOV_NET_VF=1), g("4", SRIOV_NET_VF=1), group_policy="none"),
     [10, 1000]),
]


def measure(fn: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95, count


def prepare(make: Callable, hosts: int) -> Snapshot:
    rng = random.Random(hosts)
    start = time.perf_counter()
    records, used = split_usage(make(hosts, rng))
    made = (time.perf_counter() - start) * 1000
    gc.collect()
    start = time.perf_counter()
    static = Snapshot.build(records)
    built = (time.perf_counter() - start) * 1000
    # Like a service, keep the snapshot and drop the records.
    del records
    overlays = []
    for _ in range(5):
        start = time.perf_counter()
        snap = static.with_usage(used)
        overlays.append((time.perf_counter() - start) * 1000)
    print(f"# {make.__name__}({hosts}): {len(static)} providers; records made in "
          f"{made:.0f} ms; build {built:.0f} ms; with_usage "
          f"{statistics.median(overlays):.3f} ms", flush=True)
    return snap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", nargs="+", default=None,
                        help="world prefixes to run (flat, nested, sharing, wide)")
    args = parser.parse_args()
    print(f"{'scenario':40} {'hosts':>6} {'limit':>6} {'strategy':>13} "
          f"{'median ms':>10} {'p95 ms':>9} {'results':>8}")
    for hosts in args.hosts:
        worlds: dict = {}
        for name, make, request, limits in SCENARIOS:
            if args.only and not any(name.startswith(o) for o in args.only):
                continue
            if make not in worlds:
                # One world at a time, as a service holds one snapshot.
                worlds.clear()
                gc.collect()
                worlds[make] = prepare(make, hosts)
            snap = worlds[make]
            for limit in limits:
                for strategy in ("depth-first", "breadth-first"):
                    if limit is None and strategy == "breadth-first":
                        continue
                    repeat = args.repeat if limit is not None else max(3, args.repeat // 2)

                    def run(limit=limit, strategy=strategy, request=request, snap=snap):
                        return sum(1 for _ in find_candidates(
                            snap, request, limit=limit, strategy=strategy))
                    median, p95, count = measure(run, repeat)
                    print(f"{name:40} {hosts:>6} {limit or '-':>6} {strategy:>13} "
                          f"{median:>10.1f} {p95:>9.1f} {count:>8}", flush=True)


if __name__ == "__main__":
    main()
