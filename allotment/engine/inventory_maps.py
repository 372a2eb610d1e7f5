"""Inventories as snapshots hold them: one shared ``{rc: limits}`` mapping
per distinct set of inventories, and usage kept apart.

Most providers of a cloud have one of a handful of inventories, so storing
each distinct one once keeps a snapshot of a hundred thousand providers
small, and out of the garbage collector's view (plain dicts and tuples of
numbers and strings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, compress, islice, repeat, tee
from operator import attrgetter, methodcaller

from allotment.engine.records import Inventory

#: The limits of one inventory, in the order ``engine.records`` names them
#: (CAPACITY, MIN_UNIT, MAX_UNIT, STEP_SIZE, TOTAL, RESERVED, RATIO).
limits_of = attrgetter("capacity", "min_unit", "max_unit", "step_size",
                       "total", "reserved", "allocation_ratio")
_used_of = attrgetter("used")
# Shared, never mutated: a plain dict keeps the search's lookups fast.
_NO_INVENTORY: Mapping[str, tuple] = {}


class InventoryMaps(dict):
    """One shared ``{rc: limits}`` dict per distinct tuple of (rc, limits) pairs."""

    def __missing__(self, key: tuple) -> Mapping[str, tuple]:
        value = self[key] = dict(key) if key else _NO_INVENTORY
        return value


def flatten(inventories: Sequence[Mapping[str, Inventory]], uuids: Sequence[str],
            ) -> tuple[list[Mapping[str, tuple]], dict[str, dict[str, int]]]:
    """Each provider's ``{rc: limits}`` mapping (shared between providers
    with the same inventories), in the order given; and the usage the
    inventories carry, ``{uuid: {rc: used}}`` (amounts of 0 left out).

    ``uuids[k]`` is the provider whose inventories are ``inventories[k]``.
    """
    sizes = list(map(len, inventories))
    rcs = list(chain.from_iterable(inventories))
    invs = list(chain.from_iterable(map(methodcaller("values"), inventories)))
    # Duplicates are dropped as soon as they are looked up (tee hands the
    # same tuple to both arguments), so building allocates next to nothing
    # per provider and never wakes the garbage collector, which would
    # otherwise walk every freshly loaded record again and again.
    limits: dict[tuple, tuple] = {}
    lims = list(map(limits.setdefault, *tee(map(limits_of, invs))))
    # Cut the flat (rc, limits) pairs back into one tuple per provider: each
    # islice consumes exactly that provider's share of the pairs.
    pairs = zip(rcs, lims, strict=True)
    keys = map(tuple, map(islice, repeat(pairs), sizes))
    maps = list(map(InventoryMaps().__getitem__, keys))
    used: dict[str, dict[str, int]] = {}
    amounts = list(map(_used_of, invs))
    if any(amounts):
        owners = list(chain.from_iterable(map(repeat, uuids, sizes)))
        for k in compress(range(len(amounts)), amounts):
            used.setdefault(owners[k], {})[rcs[k]] = amounts[k]
    return maps, used
