"""The differences between upstream Placement 16.0.0 and allotment that are
upstream's defects (docs/compatibility.md): each is met on the real services
and recognised by the lane, and nothing else is excused."""

from __future__ import annotations

import contextlib

import pytest

from tests.differential import ops as O
from tests.differential.compare import KNOWN, candidates, compare
from tests.differential.lane import _unsuffixed
from tests.differential.replay import Replay

INV = (1024, 0, 1, 1024, 1, 1.0)

# One pair of services for the whole lane, on one worker.
pytestmark = pytest.mark.xdist_group("differential")


def six_hosts_one_pool() -> list:
    world: list = []
    for h in range(6):
        host = 2 * h
        world += [O.Provider(None), O.SetAggregates(host, ("A",)),
                  O.Provider(host), O.SetInventory(host + 1, (("VCPU", INV),))]
    world += [O.Provider(None, sharing=True), O.SetInventory(12, (("DISK_GB", INV),))]
    return world


@contextlib.contextmanager
def replayed(services, world: list, name: str):
    """``world`` built at upstream and at allotment: their two replays."""
    up, al = (Replay(url, name) for url in services)
    try:
        for r in (up, al):
            r.setup()
            for op in world:
                r.apply(op)
        yield up, al
    finally:
        up.clear()
        al.clear()


def replay_both(services, world: list, query: O.Query):
    with replayed(services, world, f"known-{id(world)}") as (up, al):
        return up.apply(query), al.apply(query), set(up.sharing)


def test_a_pool_serving_the_unsuffixed_group_meets_one_tree_upstream(services):
    query = O.Query("1.39", (("resources", "DISK_GB:10"), ("resources1", "VCPU:1"),
                             ("group_policy", "none")))
    ex_up, ex_al, sharing = replay_both(services, six_hosts_one_pool(), query)
    assert ex_up.status == ex_al.status == 200
    # Upstream: one host of six; allotment: all six.
    assert len(ex_up.answer["allocation_requests"]) == 1
    assert len(ex_al.answer["allocation_requests"]) == 6
    assert candidates(ex_up.answer) < candidates(ex_al.answer)
    before = KNOWN["sharing pool kept for one tree"]
    assert compare(ex_up, ex_al, unsuffixed=_unsuffixed(query.params), sharing=sharing) is None
    assert KNOWN["sharing pool kept for one tree"] == before + 1


def test_without_a_suffixed_group_both_answer_alike(services):
    query = O.Query("1.39", (("resources", "DISK_GB:10,VCPU:1"),))
    world = six_hosts_one_pool()
    ex_up, ex_al, sharing = replay_both(services, world, query)
    assert ex_up.status == 200 and len(ex_up.answer["allocation_requests"]) == 6
    assert compare(ex_up, ex_al, unsuffixed=_unsuffixed(query.params), sharing=sharing) is None


def test_isolate_can_count_a_group_twice_upstream(services):
    # A host with VCPU and MEMORY_MB and a NUMA child with one of each:
    # asking for VCPU:1,MEMORY_MB:1 plus an isolated VCPU:2 group.
    one = (1, 0, 1, 1, 1, 1.0)
    world = [O.Provider(None),
             O.SetInventory(0, (("VCPU", (4096, 0, 1, 4096, 1, 1.0)), ("MEMORY_MB", one))),
             O.Provider(0), O.SetInventory(1, (("VCPU", one), ("MEMORY_MB", one)))]
    query = O.Query("1.29", (("resources", "VCPU:1,MEMORY_MB:1"), ("resources2", "VCPU:2"),
                             ("group_policy", "isolate")))
    ex_up, ex_al, _ = replay_both(services, world, query)
    totals = [sum(n for flat in [c] for _, rc, n in flat[0] if rc == "VCPU")
              for c in candidates(ex_al.answer)]
    assert totals and all(t == 3 for t in totals)
    before = KNOWN["isolate amounts counted twice"]
    problem = compare(ex_up, ex_al, requested={"VCPU": 3, "MEMORY_MB": 1})
    assert problem is None
    if candidates(ex_up.answer) != candidates(ex_al.answer):
        assert KNOWN["isolate amounts counted twice"] == before + 1


def test_limited_summaries_before_1_29_keep_the_kept_trees_siblings(services):
    # Two hosts of two NUMA nodes each; one candidate kept out of four.
    numa = (("VCPU", (4, 0, 1, 4, 1, 1.0)), ("MEMORY_MB", (1024, 0, 1, 1024, 1, 1.0)))
    world = [O.Provider(None), O.Provider(0), O.SetInventory(1, numa),
             O.Provider(0), O.SetInventory(2, numa), O.Provider(None),
             O.Provider(3), O.SetInventory(4, numa), O.Provider(3), O.SetInventory(5, numa)]
    for version, params in (("1.26", (("resources", "VCPU:1"), ("limit", "1"))),
                            ("1.27", (("resources", "MEMORY_MB:99"), ("resources1", "VCPU:4"),
                                      ("group_policy", "none"), ("limit", "2")))):
        with replayed(services, world, f"limited-{version}") as (up, al):
            query = O.Query(version, params)
            whole = O.Query(version, tuple(p for p in params if p[0] != "limit"))
            ex_up, ex_al = up.apply(query), al.apply(query)
            problem = compare(ex_up, ex_al, limit=int(params[-1][1]),
                              up_all=up.apply(whole), al_all=al.apply(whole),
                              tree_roots=up.roots())
            assert problem is None, problem
            if version == "1.26":
                # One NUMA node kept; its sibling is summarised at both services.
                for ex in (ex_up, ex_al):
                    assert len(ex.answer["allocation_requests"]) == 1
                    assert len(ex.answer["provider_summaries"]) == 2
