"""POST /reshaper: move inventory and the allocations on it in one transaction.

Inventories are changed in two steps around the allocation write, because
inventory still allocated cannot be removed and allocations cannot land on
inventory that does not exist yet:

1. interim: every provider gets the union of its current and its new
   inventory (new records win), so both the old and the new homes exist;
2. the allocations of every listed consumer are replaced, checked against
   that interim inventory, which for every class being kept *is* the final
   inventory;
3. final: every provider gets exactly its new inventory; a class removed
   while something is still allocated from it fails the whole reshape.

Usage is not checked against capacity in between, only at the end.  Nothing
is committed unless every step succeeds.  Provider generations advance once
per step that touches the provider, as upstream's do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from allotment import errors
from allotment.service import allocations as allocation_service
from allotment.service.allocations import ConsumerAllocations
from allotment.storage import inventories, resource_providers
from allotment.storage.db import Database

CONFLICT = ("update conflict: Another thread concurrently updated the data. "
            "Please retry your update")


@dataclass
class ProviderInventories:
    """The whole inventory a provider should have after the reshape."""

    provider_uuid: str
    generation: int
    inventories: Mapping[str, Mapping]


def _providers(conn: Connection, wanted: Sequence[ProviderInventories],
               batch: Sequence[ConsumerAllocations]) -> dict[str, object]:
    """Lock every provider named anywhere; check the inventory ones exist and
    are at the generation the caller saw."""
    uuids = {w.provider_uuid for w in wanted}
    uuids |= {p for item in batch for p in item.allocations}
    fresh = resource_providers.lock_many(conn, uuids=uuids)
    by_uuid = {row.uuid: row for row in fresh.values()}
    for item in wanted:
        row = by_uuid.get(item.provider_uuid)
        if row is None:
            raise errors.BadRequest(
                f"Resource provider {item.provider_uuid} in inventories not found: "
                f"No resource provider with uuid {item.provider_uuid} found",
                code=errors.RESOURCE_PROVIDER_NOT_FOUND)
        if row.generation != item.generation:
            raise errors.ConcurrentUpdate(
                f"resource provider generation conflict for provider "
                f"{item.provider_uuid}: actual: {row.generation}, given: {item.generation}")
    return by_uuid


def _replace_inventory(conn: Connection, provider_uuid: str, records: Mapping) -> None:
    provider = resource_providers.get_by_uuid(conn, provider_uuid)
    try:
        inventories.replace_all(conn, provider, records)
    except inventories.InventoryOfUnknownClass as exc:
        raise errors.BadRequest(f"malformed reshaper data: {exc.detail}") from None
    except inventories.InvalidCapacity as exc:
        raise errors.Conflict(f"Unable to allocate inventory: {exc.detail}") from None
    except inventories.InventoryInUse as exc:
        raise errors.Conflict(f"update conflict: {exc.detail}",
                              code=errors.INVENTORY_INUSE) from None


def _reshape(conn: Connection, wanted: Sequence[ProviderInventories],
             batch: Sequence[ConsumerAllocations]) -> None:
    by_uuid = _providers(conn, wanted, batch)

    for item in wanted:
        if not item.inventories:
            continue  # the union would be the current inventory: nothing to do
        current = inventories.get_for_provider(conn, by_uuid[item.provider_uuid].id)
        interim = {name: {f: row._mapping[f] for f in inventories.FIELDS}
                   for name, row in current.items()}
        interim.update(item.inventories)
        _replace_inventory(conn, item.provider_uuid, interim)

    try:
        allocation_service.write(conn, batch)
    except allocation_service.AllocationOfUnknownClass as exc:
        raise errors.BadRequest(f"malformed reshaper data: {exc}") from None
    except allocation_service.InvalidAllocation as exc:
        raise errors.Conflict(f"Unable to allocate inventory: {exc}") from None

    for item in wanted:
        _replace_inventory(conn, item.provider_uuid, item.inventories)


def reshape(db: Database, wanted: Sequence[ProviderInventories],
            batch: Sequence[ConsumerAllocations], *, attempts: int) -> None:
    """Replace inventories and allocations together, all or nothing.

    :raises errors.ConcurrentUpdate: a provider or consumer generation does
        not match (nothing changed).
    :raises errors.BadRequest, errors.Conflict: the request cannot be
        applied (nothing changed).
    """
    allocation_service.run_write(
        db, lambda conn: _reshape(conn, wanted, batch), attempts=attempts,
        conflict=CONFLICT)
