"""Engine records made from a load: providers with the same inventories
share one mapping of them, and each still has exactly its own."""

from __future__ import annotations

from allotment.storage.loader import LoadedProvider
from allotment.world.model import records_of

NUMA = {"VCPU": (8, 0, 1, 8, 1, 4.0), "MEMORY_MB": (4096, 512, 1, 4096, 1, 1.0)}


def _provider(uuid: str, inventories: dict) -> LoadedProvider:
    return LoadedProvider(uuid, uuid, 1, None, None, None, None, None, inventories,
                          frozenset(), frozenset())


def test_same_inventories_share_one_mapping():
    records = records_of({1: _provider("a", dict(NUMA)), 2: _provider("b", dict(NUMA)),
                          3: _provider("c", {"DISK_GB": (100, 0, 1, 100, 1, 1.0)}),
                          4: _provider("d", {})})
    a, b, c, d = records
    assert a.inventories is b.inventories
    assert a.inventories["VCPU"].total == 8 and a.inventories["VCPU"].allocation_ratio == 4.0
    assert a.inventories["MEMORY_MB"].reserved == 512
    assert list(c.inventories) == ["DISK_GB"] and c.inventories["DISK_GB"].total == 100
    assert d.inventories == {}


def test_stamps_share_the_root_ids():
    from allotment.world.model import Names, World

    root_id, child_id = 1000, 1001
    # The root id of the child as another int object, as a row gives it.
    other = int(str(root_id))
    loaded = {
        root_id: LoadedProvider("r", "r", 1, None, None, root_id, None, None,
                                dict(NUMA), frozenset(), frozenset()),
        child_id: LoadedProvider("c", "c", 1, "r", "r", other, None, None,
                                 dict(NUMA), frozenset(), frozenset()),
    }
    world = World(loaded, [], Names({0: "VCPU", 1: "MEMORY_MB"}))
    assert world.stamps["c"].root_id == root_id
    assert world.stamps["c"].root_id is world.stamps["r"].id
    assert not hasattr(world.stamps["c"], "__dict__")
