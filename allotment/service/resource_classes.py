"""Resource classes: standard ones are fixed, CUSTOM_ ones belong to users."""

from __future__ import annotations

import os_resource_classes
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.storage import resource_classes as store
from allotment.storage import retry
from allotment.storage.db import Database

CUSTOM_PREFIX = os_resource_classes.CUSTOM_NAMESPACE


def is_custom(name: str) -> bool:
    return name.startswith(CUSTOM_PREFIX)


def list_classes(db: Database) -> list[Row]:
    with db.read() as conn:
        return store.list_all(conn)


def _existing(conn: Connection, name: str) -> Row:
    row = store.get(conn, name)
    if row is None:
        raise errors.NotFound(f"No such resource class {name}.")
    return row


def get_class(db: Database, name: str) -> Row:
    with db.read() as conn:
        return _existing(conn, name)


@retry.retried
def create_class(db: Database, name: str) -> Row:
    with db.write() as conn:
        row = store.create(conn, name)
    if row is None:
        raise errors.Conflict(f"Conflicting resource class already exists: {name}")
    return row


@retry.retried
def ensure_class(db: Database, name: str) -> tuple[Row, bool]:
    """Create the class unless it exists; tells whether it was created."""
    with db.write() as conn:
        return store.get_or_create_class(conn, name)


@retry.retried
def rename_class(db: Database, name: str, new_name: str) -> Row:
    with db.write() as conn:
        _existing(conn, name)
        if not is_custom(name):
            raise errors.BadRequest(f"Cannot update standard resource class {name}")
        if new_name != name and not store.rename(conn, name, new_name):
            raise errors.Conflict(f"Resource class already exists: {new_name}")
        return store.get(conn, new_name)


@retry.retried
def delete_class(db: Database, name: str) -> None:
    with db.write() as conn:
        row = _existing(conn, name)
        if not is_custom(name):
            raise errors.BadRequest(
                "Error in delete resource class: Cannot delete standard "
                f"resource class {name}.")
        if store.in_use(conn, row.id):
            raise errors.Conflict(
                f"Error in delete resource class: Cannot delete resource class "
                f"{name}. Class is in use in inventory.")
        store.delete(conn, name)
