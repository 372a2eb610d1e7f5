"""Allocations: read them, replace them for one or many consumers, delete them.

Every write goes through :func:`write` inside :func:`run_write`, which is
where the invariant lives: after the transaction commits, no inventory is
used beyond ``(total - reserved) * allocation_ratio`` because of it.

Concurrency: the providers a write touches are row-locked (in id order) on
server databases before usage is read, and SQLite writers are serial
(BEGIN IMMEDIATE), so the usage a write checks is the usage it commits
against.  Provider and consumer generations are still advanced with guarded
UPDATEs; a guard that fails, a deadlock, a serialization failure or a racing
insert of the same consumer rolls the transaction back and the whole write
is tried again, up to ``[placement] allocation_conflict_retry_count`` times.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.service import consumers as consumer_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import allocations as store
from allotment.storage import consumers as consumer_store
from allotment.storage import new_claims, resource_classes, resource_providers, retry
from allotment.storage.db import Database

LOG = logging.getLogger(__name__)

T = TypeVar("T")

PROVIDER_CONFLICT = (
    "Another thread concurrently updated the resource provider data. "
    "Please retry your update")
WRITE_CONFLICT = "Inventory and/or allocations changed while attempting to allocate: "


@dataclass
class ConsumerAllocations:
    """The complete set of allocations one consumer should hold afterwards.

    ``allocations`` maps provider UUID to {resource class: amount}; an empty
    map removes every allocation of the consumer.
    """

    consumer: ConsumerRequest
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


class AllocationOfUnknownClass(Exception):
    """A resource class named by the request does not exist."""


class InvalidAllocation(Exception):
    """The allocations do not fit the inventory (missing, constraints, capacity)."""


class RetryWrite(Exception):
    """The write lost a race; roll back and run it again."""


def run_write(db: Database, work: Callable[[Connection], T], *, attempts: int,
              conflict: str = WRITE_CONFLICT + PROVIDER_CONFLICT) -> T:
    """Run ``work`` in a write transaction, again on a lost race (a
    generation that moved, a racing insert of the same consumer, project,
    user or type) or a transaction the database aborted.

    :raises errors.ConcurrentUpdate: with ``conflict`` as its detail, when
        still losing after ``attempts`` tries.
    """
    def transaction() -> T:
        with db.write() as conn:
            return work(conn)

    return retry.run(transaction, retry.Policy(
        attempts=attempts,
        # The loser of two writers creating the same row retries and finds
        # the winner's.
        lost_races=(RetryWrite, sa.exc.IntegrityError),
        after_lock_wait=True,
        gave_up=lambda: errors.ConcurrentUpdate(conflict),
        counted_as="allocation write"))


@dataclass
class _Alloc:
    consumer: int  # index into the batch
    provider: Row
    class_id: int
    class_name: str
    used: int  # 0: only marks an allocation being removed


def write(conn: Connection, batch: Sequence[ConsumerAllocations]) -> None:
    """Replace the allocations of every consumer in ``batch``, all or nothing.

    Checks happen in upstream's order: consumer generations, providers,
    resource classes, then inventory constraints and capacity.  Runs inside
    the caller's transaction, so the reshaper can compose it.

    :raises errors.ConcurrentUpdate: a consumer generation does not match.
    :raises errors.BadRequest: a provider does not exist.
    :raises AllocationOfUnknownClass, InvalidAllocation: see their names.
    :raises RetryWrite: a generation moved under us.
    """
    uuids = [item.consumer.uuid for item in batch]
    owners: list[consumer_store.OwnerIds | None] = [None] * len(batch)
    if len(batch) == 1:
        # One consumer (a claim): read with the ids of the owner it names.
        asked = batch[0].consumer
        row, owners[0] = consumer_store.get_with_owner(
            conn, asked.uuid, asked.project_id, asked.user_id, asked.consumer_type)
        existing = {} if row is None else {row.uuid: row}
    else:
        existing = consumer_store.get_many_by_uuid(conn, uuids)

    # Consumers removing everything touch the providers they held.
    emptied = [u for u, item in zip(uuids, batch, strict=True)
               if not item.allocations and u in existing]
    old_rows = store.of_consumers(conn, emptied)

    # Lock (and read) every provider involved; the generations read here are
    # the ones we bump.  Only their ids, UUIDs and generations are used.
    wanted = {p for item in batch for p in item.allocations}
    by_id = resource_providers.lock_many(
        conn, uuids=wanted, ids={r.resource_provider_id for r in old_rows}, brief=True)
    by_uuid = {row.uuid: row for row in by_id.values()}

    # A consumer created here is at generation 1 once this commits.  A claim
    # of one new consumer writes its row with its allocations, at the end
    # (storage.new_claims).
    states = [consumer_service.check_and_write_consumer(
                  conn, item.consumer, existing.get(item.consumer.uuid),
                  created_generation=1 if item.allocations else 0, owner=owner,
                  create_later=len(batch) == 1 and bool(item.allocations))
              for item, owner in zip(batch, owners, strict=True)]

    for item in batch:
        for provider_uuid in item.allocations:
            if provider_uuid not in by_uuid:
                raise errors.BadRequest(
                    f"Allocation for resource provider '{provider_uuid}' "
                    "that does not exist.")

    names = [rc for item in batch for amounts in item.allocations.values() for rc in amounts]
    class_ids = resource_classes.ids_for(conn, names)
    for name in names:
        if name not in class_ids:
            raise AllocationOfUnknownClass(f"No such resource class {name}.")

    allocs: list[_Alloc] = []
    old_by_consumer: dict[str, list[Row]] = defaultdict(list)
    for row in old_rows:
        old_by_consumer[row.consumer_id].append(row)
    for index, (item, state) in enumerate(zip(batch, states, strict=True)):
        if item.allocations:
            for provider_uuid, amounts in item.allocations.items():
                for name, used in amounts.items():
                    allocs.append(_Alloc(index, by_uuid[provider_uuid], class_ids[name],
                                         name, used))
        else:
            for row in old_by_consumer.get(state.uuid, []):
                allocs.append(_Alloc(index, by_id[row.resource_provider_id],
                                     row.resource_class_id, row.resource_class, 0))

    touched_pids = {a.provider.id for a in allocs}
    touched_cids = {a.class_id for a in allocs}
    # Usage as it was before this write, with the inventory it is held to.
    limits = store.limits_and_usage(conn, touched_pids, touched_cids)
    removed = store.delete_of_consumers(conn, [s.uuid for s in states if not s.created])
    _check_fit(allocs, limits, removed)

    added: dict[tuple[int, int], int] = defaultdict(int)
    holding = set()
    claim = None  # a new consumer and what it holds, written with the generations
    for index, state in enumerate(states):
        amounts = {(a.provider.id, a.class_id): a.used
                   for a in allocs if a.consumer == index and a.used > 0}
        if state.new is not None:
            claim = (state.new, amounts)
        else:
            store.insert(conn, state.uuid, amounts)
        for key, used in amounts.items():
            added[key] += used
        if amounts:
            holding.add(index)
    store.note_usage(conn, removed, added)

    seen = {pid: by_id[pid].generation for pid in touched_pids}
    if not (new_claims.write(conn, *claim, seen) if claim is not None
            else store.advance_providers(conn, seen)):
        raise RetryWrite()
    for index in sorted({a.consumer for a in allocs}):
        state = states[index]
        if state.created:
            continue  # created at the generation it ends with
        if not consumer_store.bump_generation(conn, state.id, state.generation):
            raise RetryWrite()
    # Only consumers whose allocations this write changed and that hold none
    # now go away, as upstream: an empty write for a consumer that held
    # nothing leaves its record (created at generation 0 if it was new).
    consumer_store.delete_if_no_allocations(
        conn, [states[index].uuid for index in {a.consumer for a in allocs} - holding])


def _check_fit(allocs: list[_Alloc], limits: Mapping, removed: Mapping) -> None:
    """Refuse allocations the inventory cannot hold.

    ``limits`` maps (provider, class) to the inventory and the usage before
    this write; ``removed`` is what this write's consumers let go of.  A
    provider already over capacity (its inventory shrank) may still be
    written to as long as the write does not make it worse.
    """
    if not allocs:
        return
    with_inventory = {pid for pid, _ in limits}
    missing = sorted({a.provider.uuid for a in allocs if a.provider.id not in with_inventory})
    if missing:
        classes = ", ".join(sorted({a.class_name for a in allocs}))
        raise InvalidAllocation(
            f"Inventory for '{classes}' on resource provider '{', '.join(missing)}' invalid.")

    requested: dict[tuple[int, int], int] = defaultdict(int)
    for alloc in allocs:
        key = (alloc.provider.id, alloc.class_id)
        requested[key] += alloc.used
        if alloc.used == 0:
            continue
        where = f"'{alloc.class_name}' on resource provider '{alloc.provider.uuid}'"
        found = limits.get(key)
        if found is None:
            raise InvalidAllocation(f"Inventory for {where} invalid.")
        inv, before = found
        if (alloc.used < inv.min_unit or alloc.used > inv.max_unit
                or alloc.used % inv.step_size != 0):
            LOG.warning("Allocation of %d %s violates min_unit %d, max_unit %d or "
                        "step_size %d", alloc.used, where, inv.min_unit, inv.max_unit,
                        inv.step_size)
            raise InvalidAllocation(
                f"Unable to create allocation for {where}. The requested amount "
                "would violate inventory constraints.")
        used = before - removed.get(key, 0)
        capacity = (inv.total - inv.reserved) * inv.allocation_ratio
        after = used + requested[key]
        if capacity < after:
            if before and after <= before:
                LOG.warning("Over capacity for %s but the write reduces the overage "
                            "from %d to %d", where, before, after)
                continue
            LOG.warning("Over capacity for %s: needed %d, used %d, capacity %s",
                        where, alloc.used, used, capacity)
            raise InvalidAllocation(
                f"Unable to create allocation for {where}. The requested amount "
                "would exceed the capacity.")


def _translate(run: Callable[[], T], not_found: str) -> T:
    """Word failures as upstream's allocation handlers do."""
    try:
        return run()
    except AllocationOfUnknownClass as exc:
        raise errors.BadRequest(f"{not_found}{exc}") from None
    except InvalidAllocation as exc:
        raise errors.Conflict(f"Unable to allocate inventory: {exc}") from None


def replace_for_consumer(db: Database, item: ConsumerAllocations, *, attempts: int) -> None:
    """PUT /allocations/{consumer_uuid}: the consumer's whole allocation."""
    _translate(
        lambda: run_write(db, lambda conn: write(conn, [item]), attempts=attempts),
        f"Unable to allocate inventory for consumer {item.consumer.uuid}: ")


def replace_many(db: Database, batch: Sequence[ConsumerAllocations], *, attempts: int) -> None:
    """POST /allocations: several consumers at once, all or nothing."""
    _translate(
        lambda: run_write(db, lambda conn: write(conn, batch), attempts=attempts),
        "Unable to allocate inventory ")


@retry.retried
def delete_for_consumer(db: Database, consumer_uuid: str) -> None:
    """Remove every allocation of a consumer, and with them the consumer."""
    with db.write() as conn:
        # No allocations, or no such consumer: nothing removed either way.
        removed = store.delete_of_consumers(conn, [consumer_uuid])
        if not removed:
            raise errors.NotFound(f"No allocations for consumer '{consumer_uuid}'")
        store.note_usage(conn, removed, {})
        consumer_store.delete_if_no_allocations(conn, [consumer_uuid])


def get_for_consumer(db: Database, consumer_uuid: str) -> list[Row]:
    """The consumer's allocations (empty when it holds none or does not
    exist): one statement, outside a transaction (no BEGIN, no COMMIT).
    nova's scheduler asks this before every claim."""
    with db.autocommit() as conn:
        return store.for_consumer(conn, consumer_uuid)


def get_for_provider(db: Database, provider_uuid: str, *,
                     detail: bool = True) -> tuple[int, list[Row]]:
    """The provider's generation and every allocation against it; without
    ``detail`` only their consumers, classes and amounts (see
    storage.allocations.provider_with_allocations).

    One statement, outside a transaction (no BEGIN, no COMMIT): a host's
    resource tracker asks this every period.
    """
    found = None
    if resource_providers.storable(provider_uuid):
        with db.autocommit() as conn:
            found = store.provider_with_allocations(conn, provider_uuid, detail=detail)
    if found is None:
        raise errors.NotFound(
            f"Resource provider '{provider_uuid}' not found: No resource "
            f"provider with uuid {provider_uuid} found")
    return found
