"""SQL for the traits a resource provider has."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import direct, links
from allotment.storage.tables import resource_provider_traits, traits

LINK = resource_provider_traits


_FOR_PROVIDER = (
    sa.select(traits.c.id, traits.c.name, traits.c.created_at, traits.c.updated_at)
    .join(LINK, LINK.c.trait_id == traits.c.id)
    .where(LINK.c.resource_provider_id == sa.bindparam("pid")).order_by(traits.c.name))


def for_provider(conn: Connection, provider_id: int) -> list[Row]:
    """The provider's trait rows (id, name, created_at, updated_at) by name."""
    return list(direct.execute(conn, _FOR_PROVIDER, {"pid": provider_id}))


def for_providers(conn: Connection, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    return links.names_by_provider(conn, LINK, "trait_id", traits.c.name, provider_ids)


def replace(conn: Connection, provider_id: int, trait_ids: Iterable[int], *,
            current: Iterable[int] | None = None) -> None:
    """Make ``trait_ids`` the provider's exact set of traits (``current``:
    its trait ids as read earlier in the transaction, if they were)."""
    links.replace(conn, LINK, "trait_id", provider_id, trait_ids, current=current)
