"""Providers of equal usage hold one map of it, and a change to one
provider's usage leaves every other provider's as it was."""

from __future__ import annotations

from allotment.world.model import World
from tests.world.test_compaction import NAMES, _loaded

HOSTS = 30


def _world() -> World:
    # Every host's first NUMA node holds 2 VCPU and 1024 MB, every third
    # host's second node 4 VCPU: two distinct usages over 40 providers.
    usage = [(1000 + 3 * h + 1, 0, 2) for h in range(HOSTS)]
    usage += [(1000 + 3 * h + 1, 1, 1024) for h in range(HOSTS)]
    usage += [(1000 + 3 * h + 2, 0, 4) for h in range(0, HOSTS, 3)]
    return World(_loaded(HOSTS), usage, NAMES)


def _usage(world: World) -> dict[str, dict[str, int]]:
    return {uuid: dict(per_rc) for uuid, per_rc in world.snapshot.used.items()}


def test_equal_usage_is_held_once():
    world = _world()
    used = world.snapshot.used
    assert len(used) == HOSTS + HOSTS // 3
    assert len({id(per_rc) for per_rc in used.values()}) == 2
    assert used["000000-numa0"] == {"VCPU": 2, "MEMORY_MB": 1024}
    assert used["000003-numa1"] == {"VCPU": 4}


def test_a_change_to_one_provider_leaves_the_others_alone():
    world = _world()
    before = _usage(world)
    # One provider up, one down to nothing, one up from nothing.
    world.add_usage([(1000 + 1, 0, 1), (1000 + 2, 0, -4), (1000 + 3 * 1 + 2, 1, 512)])
    after = _usage(world)
    assert after.pop("000000-numa0") == {"VCPU": 3, "MEMORY_MB": 1024}
    assert "000000-numa1" not in after
    assert after.pop("000001-numa1") == {"MEMORY_MB": 512}
    del before["000000-numa0"], before["000000-numa1"]
    assert after == before


def test_compaction_keeps_them_shared():
    world = _world()
    world.compact()
    assert len({id(per_rc) for per_rc in world.snapshot.used.values()}) == 2
    world.add_usage([(1000 + 4, 1, -1024)])
    assert world.snapshot.used["000001-numa0"] == {"VCPU": 2}
    assert world.snapshot.used["000002-numa0"] == {"VCPU": 2, "MEMORY_MB": 1024}
