"""SQL for the traits a resource provider has."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import links
from allotment.storage.tables import resource_provider_traits, traits

LINK = resource_provider_traits


def for_provider(conn: Connection, provider_id: int) -> list[Row]:
    """The provider's trait rows (id, name, created_at, updated_at) by name."""
    return list(conn.execute(
        sa.select(traits.c.id, traits.c.name, traits.c.created_at, traits.c.updated_at)
        .join(LINK, LINK.c.trait_id == traits.c.id)
        .where(LINK.c.resource_provider_id == provider_id).order_by(traits.c.name)))


def for_providers(conn: Connection, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    return links.names_by_provider(conn, LINK, "trait_id", traits.c.name, provider_ids)


def replace(conn: Connection, provider_id: int, trait_ids: Iterable[int]) -> None:
    """Make ``trait_ids`` the provider's exact set of traits."""
    links.replace(conn, LINK, "trait_id", provider_id, trait_ids)
