"""The world keeps its providers' ids, root ids and times in columns by
snapshot position, not an object per provider, and equal times once."""

from __future__ import annotations

import datetime
import sys

from allotment.storage.loader import LoadedProvider
from allotment.world.model import Names, World
from allotment.world.stamps import Stamp

NUMA = {"VCPU": (8, 0, 1, 8, 1, 4.0)}
WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5)


def _loaded(hosts: int, first: int = 1, start: int = 0) -> dict[int, LoadedProvider]:
    loaded = {}
    for h in range(start, start + hosts):
        root = first + 3 * (h - start)
        for k in range(3):
            pid = root + k
            # Equal, but another object for every row, as rows give them.
            created = WHEN + datetime.timedelta(seconds=h, microseconds=0)
            loaded[pid] = LoadedProvider(
                f"{h:05d}-{k}", f"host{h}-{k}", 1, None if k == 0 else f"{h:05d}-0",
                None if k == 0 else f"{h:05d}-0", root, created, None, dict(NUMA),
                frozenset(), frozenset())
    return loaded


def test_stamps_are_columns_not_objects():
    world = World(_loaded(1000), [], Names({0: "VCPU"}))
    stamps = world.stamps
    assert len(stamps) == 3000 and "00007-2" in stamps and "nope" not in stamps
    assert stamps["00007-2"] == Stamp(3 * 7 + 3, 3 * 7 + 1, WHEN + datetime.timedelta(seconds=7),
                                      None)
    columns = (stamps.ids, stamps.root_ids, stamps.created_at, stamps.updated_at)
    assert all(type(c) is list for c in columns)
    assert sum(map(sys.getsizeof, columns)) < 4 * 9 * 3000 + 400
    # A host's three providers, made in the same second, share one datetime.
    times = {id(t) for t in stamps.created_at}
    assert len(times) == 1000


def test_stamps_follow_touches_and_trees():
    world = World(_loaded(10), [], Names({0: "VCPU"}))
    later = WHEN + datetime.timedelta(days=1)
    world.touch([(4, 2, later), (4, 3, WHEN)])
    assert world.stamps["00001-0"].updated_at == later
    # Host 1 goes; a new host comes with new ids.
    world.replace_trees([4], {})
    world.replace_trees([], _loaded(1, first=100, start=20))
    assert "00001-0" not in world.stamps and 4 not in world.uuid_of_id
    assert world.stamps["00020-1"] == Stamp(101, 100, WHEN + datetime.timedelta(seconds=20),
                                            None)
    assert world.uuid_of_id[101] == "00020-1"
    rank = world.creation_rank()
    assert sorted(rank, key=rank.get)[-3:] == ["00020-0", "00020-1", "00020-2"]
    assert len(rank) == 30
