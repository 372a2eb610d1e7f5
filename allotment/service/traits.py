"""Traits: standard ones from os-traits, CUSTOM_ ones created by users."""

from __future__ import annotations

import os_traits
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.storage import retry
from allotment.storage import traits as store
from allotment.storage.db import Database

CUSTOM_PREFIX = os_traits.CUSTOM_NAMESPACE


def _existing(conn: Connection, name: str) -> Row:
    row = store.get(conn, name)
    if row is None:
        raise errors.NotFound(f"No such trait(s): {name}.")
    return row


def get_trait(db: Database, name: str) -> Row:
    with db.read() as conn:
        return _existing(conn, name)


@retry.retried
def ensure_trait(db: Database, name: str) -> tuple[Row, bool]:
    with db.write() as conn:
        return store.get_or_create_trait(conn, name)


@retry.retried
def delete_trait(db: Database, name: str) -> None:
    with db.write() as conn:
        row = _existing(conn, name)
        if not name.startswith(CUSTOM_PREFIX):
            raise errors.BadRequest(f"Cannot delete standard trait {name}.")
        if store.in_use(conn, row.id):
            raise errors.Conflict(f"The trait {name} is in use by a resource provider.")
        store.delete(conn, name)


def list_traits(
    db: Database,
    *,
    names_in: list[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[Row]:
    with db.read() as conn:
        return store.list_filtered(conn, names_in=names_in, prefix=prefix,
                                   associated=associated)
