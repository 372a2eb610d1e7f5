"""The brute-force oracle of preemption (docs/extensions/preempt.md).

Every subset of the preemptible consumers holding something on a
candidate's providers is tried; the eviction set is the first sufficient
one in the documented order: fewest consumers, then least capacity freed
beyond what is needed (each class of each provider as a fraction of its
capacity, summed over everything the set holds), then sorted consumer UUIDs.
Written from that definition over plain records, sharing no code with
``allotment.engine.whatif``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from itertools import chain, combinations

from allotment.engine.snapshot import Inventory, ProviderRecord

# consumer UUID -> provider UUID -> class -> amount
Holdings = Mapping[str, Mapping[str, Mapping[str, int]]]


def capacity(inv: Inventory) -> int:
    return int((inv.total - inv.reserved) * inv.allocation_ratio)


def freed_by(holdings: Holdings, victims, provider: str, rc: str) -> int:
    return sum(holdings[c].get(provider, {}).get(rc, 0) for c in victims)


def fits_without(world: Mapping[str, ProviderRecord], allocations: Mapping[str, Mapping[str, int]],
                 holdings: Holdings, victims) -> bool:
    for p, resources in allocations.items():
        for rc, amount in resources.items():
            inv = world[p].inventories[rc]
            if inv.used - freed_by(holdings, victims, p, rc) + amount > capacity(inv):
                return False
    return True


def excess(world: Mapping[str, ProviderRecord], allocations, holdings: Holdings,
           victims) -> Fraction:
    total = Fraction(0)
    pairs = {(p, rc) for c in victims for p, res in holdings[c].items() for rc in res}
    for p, rc in pairs:
        inv = world[p].inventories.get(rc) if p in world else None
        if inv is None:
            continue
        asked = allocations.get(p, {}).get(rc, 0)
        needed = max(0, inv.used + asked - capacity(inv)) if asked else 0
        beyond = freed_by(holdings, victims, p, rc) - needed
        if beyond > 0:
            total += Fraction(beyond, max(capacity(inv), 1))
    return total


def best_eviction(world: Mapping[str, ProviderRecord], allocations: Mapping[str, Mapping[str, int]],
                  holdings: Holdings) -> tuple[str, ...] | None:
    """The eviction set of a candidate with these ``allocations`` (``()``:
    it fits as it is; None: nothing makes it fit)."""
    eligible = sorted(c for c, held in holdings.items() if set(held) & set(allocations))
    subsets = chain.from_iterable(combinations(eligible, n) for n in range(len(eligible) + 1))
    sufficient = [s for s in subsets if fits_without(world, allocations, holdings, s)]
    if not sufficient:
        return None
    return min(sufficient, key=lambda s: (len(s), excess(world, allocations, holdings, s), s))
