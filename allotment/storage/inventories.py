"""SQL and rules for the inventories of resource providers.

``replace_all`` is the one place the rules of an inventory change live: the
capacity rule (reserved versus total), unknown resource classes, removing a
class that is still allocated, and the generation bump.  The inventory
endpoints and the reshaper both go through it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.storage import direct, feed
from allotment.storage import names as name_rows
from allotment.storage import resource_providers as providers
from allotment.storage.clock import utcnow
from allotment.storage.tables import allocations, inventories, resource_classes

LOG = logging.getLogger(__name__)

TABLE = inventories

# Largest value of any integer inventory field (a signed 32-bit column).
MAX_INT = 0x7FFFFFFF
# Largest allocation_ratio a single-precision float column holds.
MAX_RATIO = 3.40282e38

FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")
DEFAULTS = {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1,
            "allocation_ratio": 1.0}


class InventoryOfUnknownClass(errors.BadRequest):
    """An inventory names a resource class that does not exist."""


class InvalidCapacity(errors.BadRequest):
    """reserved leaves no (or negative) capacity."""


class InventoryInUse(errors.Conflict):
    """Removing inventory of a class the provider still has allocations of."""

    def __init__(self, detail: str, *, classes: list[str]) -> None:
        super().__init__(detail, code=errors.INVENTORY_INUSE)
        self.classes = classes


class InventoryBelowUsage(errors.Conflict):
    """The new inventory would leave current usage above capacity."""

    def __init__(self, detail: str, *, classes: list[str]) -> None:
        super().__init__(detail, code=errors.CONCURRENT_UPDATE)
        self.classes = classes


@dataclass
class Change:
    """What replace_all did."""

    generation: int
    # Classes whose usage now exceeds capacity (allowed, as upstream allows
    # it, so a reconfigured host can report what it really has).
    exceeded: list[str] = field(default_factory=list)
    # When the generation moved (None when the caller bumps it).
    updated_at: datetime.datetime | None = None


def capacity(inv: Mapping) -> int:
    """Usable amount: (total - reserved) * allocation_ratio, rounded down."""
    return int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])


def with_defaults(data: Mapping) -> dict:
    """An inventory record with every optional field filled in."""
    full = dict(DEFAULTS)
    full.update(data)
    return full


def check_capacity(provider_uuid: str, class_name: str, inv: Mapping, *,
                   reserved_may_equal_total: bool) -> None:
    """Refuse reserved > total (or >= total before microversion 1.26)."""
    room = capacity(inv)
    if reserved_may_equal_total and room < 0:
        raise InvalidCapacity(
            f"Invalid inventory for '{class_name}' on resource provider "
            f"'{provider_uuid}'. The reserved value is greater than total.")
    if not reserved_may_equal_total and room <= 0:
        raise InvalidCapacity(
            f"Invalid inventory for '{class_name}' on resource provider "
            f"'{provider_uuid}'. The reserved value is greater than or equal "
            "to total.")


# Built once (see storage.resource_providers for why); one provider's
# inventory is a statement that stays the same (see storage/direct.py).
_OF_PROVIDER = (
    sa.select(TABLE.c.resource_provider_id,
              resource_classes.c.name.label("resource_class"),
              TABLE.c.resource_class_id,
              *(TABLE.c[f] for f in FIELDS),
              TABLE.c.created_at, TABLE.c.updated_at)
    .join(resource_classes, resource_classes.c.id == TABLE.c.resource_class_id)
    .where(TABLE.c.resource_provider_id == sa.bindparam("pid"))
    .order_by(TABLE.c.resource_class_id))
_USAGE_BY_CLASS = (
    sa.select(allocations.c.resource_class_id, sa.func.sum(allocations.c.used))
    .where(allocations.c.resource_provider_id == sa.bindparam("pid"))
    .group_by(allocations.c.resource_class_id))
_UPDATE = (sa.update(TABLE)
           .where(TABLE.c.resource_provider_id == sa.bindparam("pid"),
                  TABLE.c.resource_class_id == sa.bindparam("cid"))
           .values(updated_at=sa.bindparam("now")))
_INSERT = sa.insert(TABLE)


def get_for_provider(conn: Connection, provider_id: int) -> dict[str, Row]:
    """The provider's inventories keyed by resource class name.

    Row fields: resource_class, resource_class_id, total, reserved, min_unit,
    max_unit, step_size, allocation_ratio, created_at, updated_at.
    """
    return {row.resource_class: row
            for row in direct.execute(conn, _OF_PROVIDER, {"pid": provider_id})}


def class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    return name_rows.ids_for(conn, resource_classes, names)


def allocated_classes(conn: Connection, provider_id: int,
                      class_ids_: Iterable[int]) -> list[str]:
    """Names of the given classes the provider has allocations of (by class id)."""
    wanted = sorted(set(class_ids_))
    if not wanted:
        return []
    rows = conn.execute(
        sa.select(resource_classes.c.name)
        .where(resource_classes.c.id.in_(
            sa.select(allocations.c.resource_class_id)
            .where(allocations.c.resource_provider_id == provider_id,
                   allocations.c.resource_class_id.in_(wanted))))
        .order_by(resource_classes.c.id))
    return [name for (name,) in rows]


def _usage_by_class_id(conn: Connection, provider_id: int) -> dict[int, int]:
    rows = conn.execute(_USAGE_BY_CLASS, {"pid": provider_id})
    return {class_id: int(used or 0) for class_id, used in rows}


def replace_all(
    conn: Connection,
    provider: Row,
    new: Mapping[str, Mapping],
    *,
    seen_generation: int | None = None,
    reserved_may_equal_total: bool = True,
    refuse_over_capacity: bool = False,
    bump: bool = True,
) -> Change:
    """Make ``new`` (class name -> fields) the provider's whole inventory.

    ``provider`` is a row from resource_providers.get_by_uuid().  Fields
    missing from a record take their defaults.  Checks, in upstream's order:
    capacity of every record (InvalidCapacity), classes that exist
    (InventoryOfUnknownClass), no removed class still allocated
    (InventoryInUse).  Only then, before writing, the generation moves from
    ``seen_generation`` (default: the row's) or errors.ConcurrentUpdate is
    raised; a refused change therefore leaves the generation alone.

    Usage above the new capacity is allowed and reported in ``exceeded``
    unless ``refuse_over_capacity`` (then InventoryBelowUsage is raised).  The
    reshaper, which checks only the final state of a reshape, leaves it
    False; ``bump=False`` leaves the generation to the caller.
    """
    records = {name: with_defaults(fields) for name, fields in new.items()}
    for name, record in records.items():
        check_capacity(provider.uuid, name, record,
                       reserved_may_equal_total=reserved_may_equal_total)
    ids = class_ids(conn, records)
    for name in records:
        if name not in ids:
            raise InventoryOfUnknownClass(f"No such resource class {name}.")

    current = get_for_provider(conn, provider.id)
    removed = {row.resource_class_id for name, row in current.items() if name not in records}
    in_use = allocated_classes(conn, provider.id, removed)
    if in_use:
        raise InventoryInUse(
            f"Inventory for '{', '.join(in_use)}' on resource provider "
            f"'{provider.uuid}' in use.", classes=in_use)

    # Allocations need inventory, and inventory in use cannot be removed: a
    # provider with no inventory yet has no usage to read.  The reshaper
    # (bump=False) may have written allocations earlier in its transaction.
    usage = _usage_by_class_id(conn, provider.id) if current or not bump else {}
    exceeded = [name for name, record in records.items()
                if usage.get(ids[name], 0) > capacity(record)]
    if exceeded and refuse_over_capacity:
        raise InventoryBelowUsage(
            f"Inventory for '{', '.join(exceeded)}' on resource provider "
            f"'{provider.uuid}' would be below its current usage.", classes=exceeded)
    for name in exceeded:
        LOG.warning("Resource provider %s is now over-capacity for %s",
                    provider.uuid, name)

    generation = provider.generation if seen_generation is None else seen_generation
    now = utcnow()
    if bump:
        # Before any write, so a competing writer queues behind our row lock
        # and then finds the generation moved.  Every writer of allocations
        # bumps it too, which keeps the checks above true until we commit.
        # The bump tells the change feed which tree changed.
        generation, now = providers.bump(conn, provider.id, generation)
    else:
        feed.note_providers(conn, [provider.id])
    if removed:
        conn.execute(sa.delete(TABLE).where(TABLE.c.resource_provider_id == provider.id,
                                            TABLE.c.resource_class_id.in_(sorted(removed))))
    changed, added = [], []
    for name, record in records.items():
        values = {f: record[f] for f in FIELDS}
        if name in current:
            changed.append({**values, "pid": provider.id, "cid": ids[name], "now": now})
        else:
            added.append({**values, "resource_provider_id": provider.id,
                          "resource_class_id": ids[name], "created_at": now})
    # One statement each for every record changed and every record added.
    if changed:
        direct.execute(conn, _UPDATE, changed)
    if added:
        direct.execute(conn, _INSERT, added)
    return Change(generation=generation, exceeded=exceeded, updated_at=now)
