"""engine.generations: the sum of a live snapshot's generations, kept as
they are set, equals the sum made afresh after every kind of change."""

from __future__ import annotations

import pickle
import random

from allotment.engine.generations import Generations
from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from allotment.world import compaction


def test_the_total_follows_every_item_set_and_appended():
    g = Generations([3, 0, 5])
    assert g.total == 8
    g[1] = 4
    g.append(None)  # a position not yet filled counts 0
    assert g.total == 12
    g[3] = 2
    g[0] = 0
    assert g.total == 11 == sum(g)


def test_a_copy_through_pickle_keeps_its_values_and_total():
    for values in ([], [7], [1, 2, 3]):
        copy = pickle.loads(pickle.dumps(Generations(values), pickle.HIGHEST_PROTOCOL))
        assert type(copy) is Generations
        assert copy == values and copy.total == sum(values)
    # As the world's compaction copies it (ints written as references).
    [copy] = compaction.remade([Generations([4, 5])])
    assert copy.total == 9


def _record(uuid: str, generation: int, parent: str | None = None) -> ProviderRecord:
    return ProviderRecord(uuid=uuid, name=uuid, generation=generation, parent_uuid=parent,
                          root_uuid=parent or uuid, inventories={"VCPU": Inventory(8)})


def _summed(snap: LiveSnapshot) -> int:
    return sum(snap.generation_of(i) for i in snap.live_positions())


def test_a_live_snapshot_keeps_the_sum_through_writes_drops_and_reused_positions():
    rng = random.Random(7)
    hosts = [f"00000000-0000-0000-0000-{n:012d}" for n in range(30)]
    snap = LiveSnapshot.build(_record(h, rng.randrange(5)) for h in hosts[:20])
    assert snap.generations_total() == _summed(snap)
    for step in range(300):
        host = rng.choice(hosts)
        if rng.random() < 0.6 and host in snap.index:
            # A claim: the generation moves on (never back).
            i = snap.index[host]
            snap.set_generation(host, snap.generation_of(i) + rng.choice((-1, 1, 2)))
        elif host in snap.index and rng.random() < 0.5:
            snap.replace_trees([host], [])  # the host goes; its position is freed
        else:
            # The host (again), maybe with a child: freed positions reused.
            tree = [_record(host, rng.randrange(9))]
            if rng.random() < 0.5:
                tree.append(_record(f"{host[:-3]}c{step % 100:02d}", rng.randrange(9), host))
            snap.replace_trees([host] if host in snap.index else [], tree)
        assert snap.generations_total() == _summed(snap), step
