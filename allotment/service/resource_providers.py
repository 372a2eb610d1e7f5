"""Resource providers: create, show, list, rename, move in a tree, delete."""

from __future__ import annotations

import uuid as uuid_mod
from dataclasses import dataclass, field

from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.service import provider_listing
from allotment.storage import resource_providers as store
from allotment.storage import retry
from allotment.storage.db import Database
from allotment.world.sync import Replica

# Sentinel: "the request said nothing about the parent".
UNCHANGED = object()


class ProviderNotFound(errors.NotFound):
    def __init__(self, uuid: str) -> None:
        super().__init__(f"No resource provider with uuid {uuid} found")
        self.uuid = uuid


def require(conn: Connection, uuid: str) -> Row:
    """The provider row, or ProviderNotFound (malformed UUIDs included)."""
    row = store.get_by_uuid(conn, uuid)
    if row is None:
        raise ProviderNotFound(uuid)
    return row


def require_locked(conn: Connection, uuid: str) -> Row:
    """``require``, row-locking the provider in the same statement."""
    row = store.lock_by_uuid(conn, uuid)
    if row is None:
        raise ProviderNotFound(uuid)
    return row


def get_provider(db: Database, uuid: str) -> Row:
    with db.read() as conn:
        return require(conn, uuid)


def show_provider(replica: Replica, uuid: str) -> provider_listing.ProviderView | Row:
    """The provider for GET /resource_providers/{uuid}: from the world,
    current as of now, without a query of its own when the world knows it."""
    found = provider_listing.show(replica, uuid)
    return found if found is not None else get_provider(replica.db, uuid)


def get_usages(replica: Replica, uuid: str) -> tuple[int, dict[str, int]]:
    """The provider's generation and its usage of every class it has inventory of."""
    found = provider_listing.usages(replica, uuid)
    if found is None:
        raise ProviderNotFound(uuid)
    return found


def _duplicate(uuid: str | None, name: str | None) -> errors.Conflict:
    parts = []
    if uuid is not None:
        parts.append(f"uuid: {uuid}")
    if name is not None:
        parts.append(f"name: {name}")
    return errors.Conflict(
        f"Conflicting resource provider {', '.join(parts)} already exists.",
        code=errors.DUPLICATE_NAME)


@retry.retried
def create_provider(db: Database, *, name: str, uuid: str | None = None,
                    parent_uuid: str | None = None) -> Row | store.ProviderRow:
    """A new provider; ``uuid`` may be any spelling of a UUID (normalised)."""
    uuid = str(uuid_mod.UUID(uuid)) if uuid else str(uuid_mod.uuid4())

    def refuse(reason: str) -> errors.BadRequest:
        return errors.BadRequest(
            f'Unable to create resource provider "{name}", {uuid}: Object action '
            f"create failed because: {reason}")

    with db.write() as conn:
        parent = None
        if parent_uuid is not None:
            if parent_uuid == uuid:
                raise refuse("parent provider UUID cannot be same as UUID. Please set "
                             "parent provider UUID to None if there is no parent.")
            store.lock_tree_shapes(conn)
            # Locked, so the parent cannot go before the child is in.
            parent = store.lock_by_uuid(conn, parent_uuid)
            if parent is None:
                raise refuse("parent provider UUID does not exist.")
        row = store.create(conn, uuid=uuid, name=name, parent=parent)
        if row is None:  # the uuid or the name is taken: say which
            raise _duplicate(uuid if store.uuid_taken(conn, uuid) else None,
                             name if store.name_taken(conn, name) else None)
        return row


@retry.retried
def update_provider(db: Database, uuid: str, *, name: str,
                    parent_uuid: object = UNCHANGED,
                    allow_reparenting: bool = False) -> Row:
    """Rename and, from 1.14, set the parent.

    Before 1.37 only a root may be given a parent; from 1.37 a provider may
    move anywhere except into its own subtree, or become a root.
    """
    def refuse(action: str, reason: str) -> errors.BadRequest:
        return errors.BadRequest(
            f"Unable to save resource provider {uuid}: Object action {action} "
            f"failed because: {reason}")

    with db.write() as conn:
        row = require(conn, uuid)
        if parent_uuid is not UNCHANGED:
            store.lock_tree_shapes(conn)
            row = require(conn, uuid)
            _move(conn, row, parent_uuid, allow_reparenting, refuse)
        if name != row.name:
            if store.name_taken(conn, name, except_id=row.id) or not store.rename(
                    conn, row.id, name):
                raise errors.Conflict(
                    f"Conflicting resource provider {name} already exists.",
                    code=errors.DUPLICATE_NAME)
        else:
            store.touch(conn, row.id)
        return store.get_by_id(conn, row.id)


def _move(conn: Connection, row: Row, parent_uuid, allow_reparenting: bool, refuse) -> None:
    if parent_uuid is None:
        if row.parent_provider_id is None:
            return
        if not allow_reparenting:
            raise refuse("update", "un-parenting a provider is not currently allowed.")
        store.lock_rows(conn, [row.id])
        store.set_parent(conn, row, None)
        return
    parent = store.get_by_uuid(conn, parent_uuid)
    if parent is None:
        # Upstream names the action "create" here too.
        raise refuse("create", "parent provider UUID does not exist.")
    if (row.parent_provider_id is not None and row.parent_provider_id != parent.id
            and not allow_reparenting):
        raise refuse("update", "re-parenting a provider is not currently allowed.")
    if parent.id in store.subtree_ids(conn, row):
        raise refuse("update", "creating loop in the provider tree is not allowed.")
    if row.parent_provider_id == parent.id:
        return
    store.lock_rows(conn, [row.id, parent.id])
    store.set_parent(conn, row, store.get_by_id(conn, parent.id))


@retry.retried
def delete_provider(db: Database, uuid: str) -> None:
    with db.write() as conn:
        row = store.get_by_uuid(conn, uuid)
        if row is None:
            raise errors.NotFound(f"No resource provider with uuid {uuid} found for delete")
        store.lock_tree_shapes(conn)
        store.lock_rows(conn, [row.id])
        cannot_delete_parent = errors.Conflict(
            f"Unable to delete parent resource provider {uuid}: It has child "
            "resource providers.", code=errors.PROVIDER_CANNOT_DELETE_PARENT)
        if store.has_children(conn, row.id):
            raise cannot_delete_parent
        if store.has_allocations(conn, row.id):
            raise errors.Conflict(
                f"Unable to delete resource provider {uuid}: Resource provider has "
                "allocations.", code=errors.PROVIDER_IN_USE)
        if not store.delete(conn, row.id):
            raise cannot_delete_parent


# -- listing ---------------------------------------------------------------

@dataclass
class ProviderFilters:
    """GET /resource_providers filters, already parsed from the query."""

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: list[frozenset[str]] = field(default_factory=list)
    forbidden_aggregates: set[str] = field(default_factory=set)
    required_traits: list[frozenset[str]] = field(default_factory=list)
    forbidden_traits: set[str] = field(default_factory=set)
    resources: dict[str, int] = field(default_factory=dict)


def list_providers(replica: Replica, filters: ProviderFilters) -> list:
    """Providers matching every filter (see service.provider_listing)."""
    return provider_listing.list_providers(replica, filters)
