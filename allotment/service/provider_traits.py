"""Traits of a resource provider (from 1.6)."""

from __future__ import annotations

from sqlalchemy.engine import Row

from allotment import errors
from allotment.service.resource_providers import require
from allotment.storage import provider_traits as store
from allotment.storage import resource_providers as providers
from allotment.storage import retry
from allotment.storage import traits as trait_store
from allotment.storage.db import Database

GENERATION_CONFLICT = (
    "Resource provider's generation already changed. Please update the "
    "generation and try again.")


def get_traits(db: Database, uuid: str) -> tuple[Row, list[Row]]:
    with db.read() as conn:
        provider = require(conn, uuid)
        return provider, store.for_provider(conn, provider.id)


@retry.retried
def set_traits(db: Database, uuid: str, names: list[str],
               generation: int) -> tuple[Row, list[Row]]:
    """Replace the provider's traits; every name must be a known trait."""
    with db.write() as conn:
        provider = require(conn, uuid)
        if generation != provider.generation:
            raise errors.ConcurrentUpdate(GENERATION_CONFLICT)
        rows = trait_store.rows_named(conn, names)
        known = {row.name: row.id for row in rows}
        missing = sorted(set(names) - set(known))
        if missing:
            raise errors.BadRequest(f"No such trait {', '.join(missing)}")
        current = store.for_provider(conn, provider.id)
        if {row.id for row in current} == set(known.values()):
            # Setting the traits it already has changes nothing, so the
            # generation stays where it is, as in Placement.
            return provider, current
        generation, now = providers.bump(conn, provider.id, generation)
        store.replace(conn, provider.id, known.values(), current=[row.id for row in current])
        # What it has now is what was asked for: no need to read it back.
        return providers.advanced(provider, generation, now), rows


@retry.retried
def delete_traits(db: Database, uuid: str) -> None:
    with db.write() as conn:
        provider = require(conn, uuid)
        if not store.for_provider(conn, provider.id):
            return  # nothing to remove: the generation stays
        providers.bump_generation(conn, provider.id, provider.generation)
        store.replace(conn, provider.id, [])
