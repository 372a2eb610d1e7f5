"""Aggregates a resource provider is a member of (from 1.1)."""

from __future__ import annotations

from sqlalchemy.engine import Row

from allotment import errors
from allotment.service.resource_providers import require, require_locked
from allotment.storage import aggregates as store
from allotment.storage import resource_providers as providers
from allotment.storage import retry
from allotment.storage.db import Database

GENERATION_CONFLICT = (
    "Resource provider's generation already changed. Please update the "
    "generation and try again.")


def get_aggregates(db: Database, uuid: str) -> tuple[Row, list[str]]:
    with db.read() as conn:
        provider = require(conn, uuid)
        return provider, store.for_provider(conn, provider.id)


@retry.retried
def set_aggregates(db: Database, uuid: str, aggregates: list[str], *,
                   generation: int | None) -> Row:
    """Replace the provider's aggregates.

    From 1.19 the caller passes the generation it saw and the generation
    moves; before, membership changes leave the generation alone (``None``).
    """
    with db.write() as conn:
        if generation is None:
            # Nothing else takes the row lock here: without it a concurrent
            # delete of the provider would only show as a foreign key error.
            provider = require_locked(conn, uuid)
        else:
            provider = require(conn, uuid)
            if generation != provider.generation:
                raise errors.ConcurrentUpdate(GENERATION_CONFLICT)
            try:
                generation, now = providers.bump(conn, provider.id, generation)
            except errors.ConcurrentUpdate as exc:
                raise errors.ConcurrentUpdate(f"Update conflict: {exc.detail}") from None
            store.replace(conn, provider.id, aggregates)
            return providers.advanced(provider, generation, now)
        store.replace(conn, provider.id, aggregates)
        return providers.get_by_id(conn, provider.id)
