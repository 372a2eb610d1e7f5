"""What storage hands the engine: one record per provider, with its inventories.

Kept apart from the snapshot that indexes them, so that what the engine
takes in can be read (and built, in storage and tests) on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# A provider with this trait shares its inventory with every tree that has a
# provider in one of its aggregates.
SHARES_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

# Placement's default max_unit for an inventory (a signed 32-bit integer).
MAX_UNIT_DEFAULT = 2147483647

# Positions in the per-inventory tuples the snapshot keeps (see _limits).
CAPACITY, MIN_UNIT, MAX_UNIT, STEP_SIZE, TOTAL, RESERVED, RATIO = range(7)


def fits(limits: tuple, used: int, amount: int) -> bool:
    """Whether a single request of ``amount`` may be placed on an inventory
    with these limits (see CAPACITY ...) of which ``used`` is allocated: the
    rule every search, filter and listing applies.  (The engine's hottest
    loops spell it out in place, saying so.)"""
    return (limits[MIN_UNIT] <= amount <= limits[MAX_UNIT]
            and amount % limits[STEP_SIZE] == 0
            and used + amount <= limits[CAPACITY])


@dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class on one provider, including what is already used."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_UNIT_DEFAULT
    step_size: int = 1
    allocation_ratio: float = 1.0
    used: int = 0
    # Placement truncates the overcommitted capacity to an integer when it
    # reports it; amounts are integers so the comparison is unaffected.
    capacity: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "capacity",
            int((self.total - self.reserved) * self.allocation_ratio))

    def fits(self, amount: int) -> bool:
        """Whether a single request of ``amount`` may be placed here."""
        return fits((self.capacity, self.min_unit, self.max_unit, self.step_size),
                    self.used, amount)


@dataclass(frozen=True, slots=True)
class ProviderRecord:
    """What storage knows about one resource provider."""

    uuid: str
    name: str = ""
    generation: int = 0
    parent_uuid: str | None = None
    # Optional: derived from the parent chain when omitted, checked when given.
    root_uuid: str | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
