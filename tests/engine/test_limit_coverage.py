"""Which hosts a ``limit`` keeps.

Schedulers ask for ``limit=1000`` candidates and then weigh *hosts*, so a
limited answer must reach as many hosts as it has candidates (or every viable
host, if there are fewer), under every generation strategy and setting.
Upstream Placement 16.0.0 keeps an arbitrary selection of everything it
generated; on these shapes it reaches 657, 613, 469 and 99 hosts.
"""

from __future__ import annotations

import random

import pytest
from engine_worlds import World, group, request

from allotment.engine import Snapshot, find_candidates
from allotment.engine.search import STRATEGIES

VCPU, MEM, DISK, VF, VGPU = "VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF", "VGPU"


def numa_hosts(n: int) -> Snapshot:
    """Host (DISK_GB) -> 2 NUMA nodes (VCPU, MEMORY_MB) -> 2 PFs + a GPU each."""
    w = World()
    for h in range(n):
        cn = f"cn{h}"
        w.add(cn, inv={DISK: 2000})
        for k in range(2):
            numa = f"{cn}_numa{k}"
            w.add(numa, parent=cn, inv={VCPU: 32, MEM: 131072}, traits=["HW_NUMA_ROOT"])
            for p in range(2):
                w.add(f"{numa}_pf{p}", parent=numa, inv={VF: 8})
            w.add(f"{numa}_gpu", parent=numa, inv={VGPU: 4})
    return w.snapshot()


def device_hosts(n: int, devices: int = 8) -> Snapshot:
    """Hosts with ``devices`` single-unit devices each."""
    w = World()
    for h in range(n):
        w.add(f"cn{h}", inv={VCPU: 64, MEM: 262144})
        for d in range(devices):
            w.add(f"cn{h}_dev{d}", parent=f"cn{h}", inv={"CUSTOM_DEVICE": 1})
    return w.snapshot()


def hosts_reached(snap: Snapshot, cands) -> int:
    return len({snap.root_uuid(u) for c in cands for u in c.allocations})


SHAPES = {
    "plain": (1000, request(group(VCPU=2, MEMORY_MB=2048, DISK_GB=20))),
    "vgpu": (1000, request(group(VCPU=2, MEMORY_MB=2048, DISK_GB=20),
                           group("_G", VGPU=1), group_policy="none")),
    "two-vf-groups": (1000, request(group(VCPU=2, MEMORY_MB=2048, DISK_GB=20),
                                    group("_N1", SRIOV_NET_VF=1),
                                    group("_N2", SRIOV_NET_VF=1), group_policy="none")),
}


@pytest.fixture(scope="module")
def numa_1000() -> Snapshot:
    return numa_hosts(1000)


@pytest.fixture(scope="module")
def devices_300() -> Snapshot:
    return device_hosts(300)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_limit_1000_reaches_every_numa_host(numa_1000, shape, strategy):
    hosts, req = SHAPES[shape]
    cands = list(find_candidates(numa_1000, req, limit=1000, strategy=strategy))
    assert len(cands) == 1000
    assert hosts_reached(numa_1000, cands) == hosts


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_limit_1000_reaches_every_host_of_isolated_device_groups(devices_300, strategy):
    req = request(group(VCPU=1, MEMORY_MB=1024),
                  *(group(f"_D{i}", CUSTOM_DEVICE=1) for i in range(4)),
                  group_policy="isolate")
    cands = list(find_candidates(devices_300, req, limit=1000, strategy=strategy))
    assert len(cands) == 1000
    assert hosts_reached(devices_300, cands) == 300


def test_a_limit_below_the_hosts_reaches_one_host_per_candidate(devices_300):
    req = request(*(group(f"_D{i}", CUSTOM_DEVICE=1) for i in range(2)),
                  group_policy="isolate")
    for limit in (1, 7, 299):
        cands = list(find_candidates(devices_300, req, limit=limit))
        assert hosts_reached(devices_300, cands) == limit


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_generation_cap_bounds_the_hosts_a_limit_can_reach(strategy):
    # max_allocation_candidates stops generation first; the limit then spreads
    # over what was generated.  Depth-first generates 4*3=12 candidates per
    # host, so 30 of them come from 3 hosts; breadth-first reaches 30 hosts.
    snap = device_hosts(40, devices=4)
    req = request(*(group(f"_D{i}", CUSTOM_DEVICE=1) for i in range(2)),
                  group_policy="isolate")
    generated = list(find_candidates(snap, req, max_candidates=30, strategy=strategy))
    limited = list(find_candidates(snap, req, limit=10, max_candidates=30, strategy=strategy))
    assert len(limited) == 10 and all(c in generated for c in limited)
    reachable = hosts_reached(snap, generated)
    assert reachable == (3 if strategy == "depth-first" else 30)
    assert hosts_reached(snap, limited) == min(10, reachable)


def test_randomized_limits_also_spread_over_hosts(devices_300):
    req = request(*(group(f"_D{i}", CUSTOM_DEVICE=1) for i in range(4)),
                  group_policy="isolate")
    first = list(find_candidates(devices_300, req, limit=100, randomize=True,
                                 rng=random.Random(1)))
    second = list(find_candidates(devices_300, req, limit=100, randomize=True,
                                  rng=random.Random(2)))
    assert hosts_reached(devices_300, first) == hosts_reached(devices_300, second) == 100
    assert first != second
