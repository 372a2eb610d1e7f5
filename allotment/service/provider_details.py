"""One provider's traits, aggregates and inventories, read from the world.

Every host's resource tracker reads these for each provider of its tree
every few minutes (nova's association refresh), so they are among the
most frequent requests a cloud makes.  The process's world holds all of
it, current as of the request's start, so each answer is a dictionary
lookup instead of three statements on a pooled connection.

Each function returns None when the world cannot give the same answer as
the tables: a UUID the world does not hold (the tables may still match it,
as MySQL's case-insensitive collations do), or a provider kept out of the
world because its links are damaged.  The caller then asks the tables as
before, so the answer never depends on which path served it.
"""

from __future__ import annotations

import re

from allotment.engine.snapshot import MAX_UNIT, MIN_UNIT, RATIO, RESERVED, STEP_SIZE, TOTAL
from allotment.world.model import World
from allotment.world.sync import Replica

# Aggregate UUIDs as the tables order them under any collation: lowercase
# hex with the dashes in the same places (a collation that ignores dashes
# or case could order other spellings differently from Python).
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _index(world: World, uuid: str) -> int | None:
    if uuid in world.damaged:
        return None
    return world.snapshot.index.get(uuid)


def traits(replica: Replica, uuid: str) -> tuple[int, list[str]] | None:
    """(generation, the provider's trait names in the tables' order of names)."""
    with replica.current() as world:
        i = _index(world, uuid)
        if i is None:
            return None
        snap = world.snapshot
        order = world.names.trait_order
        have = snap.traits[i]
        if not all(name in order for name in have):
            return None
        return snap.generation_of(i), sorted(have, key=order.__getitem__)


def aggregates(replica: Replica, uuid: str) -> tuple[int, list[str]] | None:
    """(generation, the UUIDs of the provider's aggregates, sorted)."""
    with replica.current() as world:
        i = _index(world, uuid)
        if i is None:
            return None
        snap = world.snapshot
        have = snap.aggregates[i]
        if not all(_CANONICAL_UUID.fullmatch(a) for a in have):
            return None
        return snap.generation_of(i), sorted(have)


def inventories(replica: Replica, uuid: str) -> tuple[int, dict[str, dict]] | None:
    """(generation, each inventory's six fields by class, in class id order)."""
    with replica.current() as world:
        i = _index(world, uuid)
        if i is None:
            return None
        snap = world.snapshot
        inventory = snap.inventory[i] or {}
        ids = world.names.class_id
        if not all(rc in ids for rc in inventory):
            return None
        return snap.generation_of(i), {
            rc: {"total": inventory[rc][TOTAL], "reserved": inventory[rc][RESERVED],
                 "min_unit": inventory[rc][MIN_UNIT], "max_unit": inventory[rc][MAX_UNIT],
                 "step_size": inventory[rc][STEP_SIZE],
                 "allocation_ratio": inventory[rc][RATIO]}
            for rc in sorted(inventory, key=ids.__getitem__)}
