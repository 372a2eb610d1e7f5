"""Inventories of a resource provider: list, show, replace, add, update, delete.

Each function runs in one write transaction and reports Placement's own
messages, which differ by endpoint for the same underlying rule.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.engine import Row

from allotment import errors
from allotment.service.resource_providers import require
from allotment.storage import inventories as store
from allotment.storage import resource_providers as providers
from allotment.storage import retry
from allotment.storage.db import Database

GENERATION_CONFLICT = "resource provider generation conflict"


def _check_generation(provider: Row, generation: int) -> None:
    if generation != provider.generation:
        raise errors.ConcurrentUpdate(GENERATION_CONFLICT)


def list_inventories(db: Database, uuid: str) -> tuple[Row, dict[str, Row]]:
    with db.read() as conn:
        provider = require(conn, uuid)
        return provider, store.get_for_provider(conn, provider.id)


def get_inventory(db: Database, uuid: str, resource_class: str) -> tuple[Row, Row]:
    with db.read() as conn:
        provider = require(conn, uuid)
        inventory = store.get_for_provider(conn, provider.id).get(resource_class)
    if inventory is None:
        raise errors.NotFound(f"No inventory of class {resource_class} for {uuid}")
    return provider, inventory


@retry.retried
def replace_inventories(db: Database, uuid: str, generation: int,
                        inventories: Mapping[str, Mapping], *,
                        reserved_may_equal_total: bool) -> tuple[Row, dict[str, dict]]:
    """PUT /inventories: the provider's new generation and the stored records."""
    with db.write() as conn:
        provider = require(conn, uuid)
        _check_generation(provider, generation)
        try:
            change = store.replace_all(conn, provider, inventories,
                                       reserved_may_equal_total=reserved_may_equal_total)
        except store.InvalidCapacity as exc:
            raise errors.BadRequest(
                f"Unable to update inventory for resource provider {uuid}: "
                f"{exc.detail}") from None
        except store.InventoryOfUnknownClass as exc:
            raise errors.BadRequest(
                "Unknown resource class in inventory for resource provider "
                f"{uuid}: {exc.detail}") from None
        except (store.InventoryInUse, errors.ConcurrentUpdate) as exc:
            raise errors.Conflict(f"update conflict: {exc.detail}", code=exc.code) from None
        return providers.advanced(provider, change.generation, change.updated_at), {
            name: store.with_defaults(fields) for name, fields in inventories.items()}


@retry.retried
def delete_inventories(db: Database, uuid: str) -> None:
    """DELETE /inventories (1.5): remove all, unless some class is in use."""
    with db.write() as conn:
        provider = require(conn, uuid)
        try:
            store.replace_all(conn, provider, {})
        except errors.ConcurrentUpdate:
            raise errors.ConcurrentUpdate(
                f"Unable to delete inventory for resource provider {uuid} because "
                "the inventory was updated by another process. Please retry your "
                "request.") from None


@retry.retried
def _one_change(db: Database, uuid: str, resource_class: str, fields: Mapping, *,
                generation: int | None, creating: bool,
                reserved_may_equal_total: bool) -> tuple[Row, dict]:
    verb = "create" if creating else "update"
    with db.write() as conn:
        provider = require(conn, uuid)
        if generation is not None:
            _check_generation(provider, generation)
        record = store.with_defaults(fields)
        try:
            store.check_capacity(uuid, resource_class, record,
                                 reserved_may_equal_total=reserved_may_equal_total)
        except store.InvalidCapacity as exc:
            raise errors.BadRequest(
                f"Unable to {verb} inventory for resource provider {uuid}: "
                f"{exc.detail}") from None
        current = {name: {f: getattr(row, f) for f in store.FIELDS}
                   for name, row in store.get_for_provider(conn, provider.id).items()}
        if creating:
            if not store.class_ids(conn, [resource_class]):
                raise errors.BadRequest(
                    f"Unable to create inventory for resource provider {uuid}: "
                    f"No such resource class {resource_class}.")
            if resource_class in current:
                raise errors.ConcurrentUpdate(
                    f"Update conflict: Inventory for '{resource_class}' on resource "
                    f"provider '{uuid}' already exists.")
        else:
            if not store.class_ids(conn, [resource_class]):
                raise errors.NotFound(f"No such resource class {resource_class}.")
            if resource_class not in current:
                raise errors.BadRequest(
                    "No inventory record with resource class for resource provider "
                    f"{uuid}: No inventory of class {resource_class} found.")
        current[resource_class] = record
        try:
            # The new record was checked at the request's microversion above;
            # the others were valid when stored.
            change = store.replace_all(conn, provider, current,
                                       reserved_may_equal_total=True)
        except errors.ConcurrentUpdate as exc:
            prefix = "Update conflict" if creating else "update conflict"
            raise errors.ConcurrentUpdate(f"{prefix}: {exc.detail}") from None
        return providers.advanced(provider, change.generation, change.updated_at), record


def add_inventory(db: Database, uuid: str, resource_class: str, fields: Mapping, *,
                  reserved_may_equal_total: bool) -> tuple[Row, dict]:
    """POST /inventories: one class the provider has no inventory of yet."""
    return _one_change(db, uuid, resource_class, fields, generation=None, creating=True,
                       reserved_may_equal_total=reserved_may_equal_total)


def update_inventory(db: Database, uuid: str, resource_class: str, generation: int,
                     fields: Mapping, *, reserved_may_equal_total: bool) -> tuple[Row, dict]:
    """PUT /inventories/{class}: change one existing inventory."""
    return _one_change(db, uuid, resource_class, fields, generation=generation,
                       creating=False, reserved_may_equal_total=reserved_may_equal_total)


@retry.retried
def delete_inventory(db: Database, uuid: str, resource_class: str) -> None:
    """DELETE /inventories/{class}."""
    with db.write() as conn:
        provider = require(conn, uuid)
        if not store.class_ids(conn, [resource_class]):
            raise errors.NotFound(
                f"No inventory of class {resource_class} found for delete: "
                f"No such resource class {resource_class}.")
        current = {name: {f: getattr(row, f) for f in store.FIELDS}
                   for name, row in store.get_for_provider(conn, provider.id).items()}
        if resource_class not in current:
            raise errors.NotFound(
                f"No inventory of class {resource_class} found for delete: No "
                f"inventory of class {resource_class} found for delete")
        del current[resource_class]
        try:
            store.replace_all(conn, provider, current)
        except (store.InventoryInUse, errors.ConcurrentUpdate) as exc:
            # Upstream reports both with the concurrent-update code.
            raise errors.ConcurrentUpdate(
                f"Unable to delete inventory of class {resource_class}: "
                f"{exc.detail}") from None
