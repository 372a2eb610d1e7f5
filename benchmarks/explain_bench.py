"""Cost of explain next to the candidates query it explains.

Run: ``.venv/bin/python benchmarks/explain_bench.py [--hosts 1000 10000]
[--repeat 5]``.  Asserts nothing; prints, per scenario, the median latency
in milliseconds of the candidates query (no ``limit``), of explain with the
default ``explain_limit`` (50) and of explain of every tree, and the ratio
of a request with the default explain (query plus explain) to the query
alone.  Half the hosts of the flat world lack
the required trait, so half its trees fail.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_bench import flat_world, g, nested_world, prepare, req

from allotment.engine import SearchGroup
from allotment.engine import extensions as ext
from allotment.engine.explain import explain

SCENARIOS = [
    ("flat: VCPU,MEM,DISK + AVX2", flat_world,
     req(SearchGroup(resources={"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20},
                      required_traits=(frozenset({"HW_CPU_X86_AVX2"}),)))),
    ("flat: too much VCPU everywhere", flat_world, req(g(VCPU=300))),
    ("nested: NUMA-affine VCPU+VGPU+VF", nested_world,
     req(g(DISK_GB=20), g("_C", VCPU=20, MEMORY_MB=4096), g("_G", VGPU=1),
         g("_N", SRIOV_NET_VF=1), group_policy="none",
         same_subtrees=[frozenset({"_C", "_G", "_N"})])),
]


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'scenario':36} {'hosts':>6} {'query ms':>9} {'explain ms':>11} "
          f"{'all trees ms':>13} {'ratio':>6} {'failing':>8}")
    for hosts in args.hosts:
        snaps: dict = {}
        for name, make, request in SCENARIOS:
            if make not in snaps:
                snaps.clear()
                snaps[make] = prepare(make, hosts)
            snap = snaps[make]
            query = median_ms(lambda s=snap, r=request: list(ext.find_extended_candidates(s, r)),
                              args.repeat)
            default = median_ms(lambda s=snap, r=request: explain(s, r, tree_limit=50),
                                args.repeat)
            every = median_ms(lambda s=snap, r=request: explain(s, r, tree_limit=10**9),
                              args.repeat)
            failing = len(explain(snap, request, tree_limit=10**9).failing)
            print(f"{name:36} {hosts:>6} {query:>9.1f} {default:>11.1f} {every:>13.1f} "
                  f"{(query + default) / query:>6.2f} {failing:>8}", flush=True)


if __name__ == "__main__":
    main()
