"""SQL for aggregates and providers' membership in them."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import direct, links
from allotment.storage.clock import utcnow
from allotment.storage.tables import placement_aggregates, resource_provider_aggregates

AGG = placement_aggregates
LINK = resource_provider_aggregates


def for_provider(conn: Connection, provider_id: int) -> list[str]:
    """UUIDs of the provider's aggregates, in a stable order."""
    return [u for (u,) in conn.execute(
        sa.select(AGG.c.uuid).join(LINK, LINK.c.aggregate_id == AGG.c.id)
        .where(LINK.c.resource_provider_id == provider_id).order_by(AGG.c.uuid))]


def for_providers(conn: Connection, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    return links.names_by_provider(conn, LINK, "aggregate_id", AGG.c.uuid, provider_ids)


# Built once; one aggregate's (the usual case) never changes, so it can run
# directly (storage/direct.py).
_IDS_OF = sa.select(AGG.c.uuid, AGG.c.id).where(
    AGG.c.uuid.in_(sa.bindparam("uuids", expanding=True)))
_ID_OF = sa.select(AGG.c.uuid, AGG.c.id).where(AGG.c.uuid == sa.bindparam("uuid"))


def ids_creating_missing(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """Ids of the aggregates, creating the missing ones.

    Aggregates exist only as UUIDs named by their members; two writers may
    create the same one at once, so a lost race just reads the winner's row.
    """
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    if len(wanted) == 1:
        found = dict(direct.execute(conn, _ID_OF, {"uuid": wanted[0]}).all())
    else:
        found = dict(conn.execute(_IDS_OF, {"uuids": wanted}).all())
    for agg in wanted:
        if agg in found:
            continue
        try:
            with conn.begin_nested():
                found[agg] = conn.execute(
                    sa.insert(AGG).values(uuid=agg, created_at=utcnow())
                ).inserted_primary_key[0]
        except sa.exc.IntegrityError:
            found[agg] = conn.execute(sa.select(AGG.c.id).where(AGG.c.uuid == agg)).scalar_one()
    return found


def replace(conn: Connection, provider_id: int, uuids: Iterable[str]) -> None:
    """Make ``uuids`` the provider's exact set of aggregates."""
    links.replace(conn, LINK, "aggregate_id", provider_id,
                  ids_creating_missing(conn, uuids).values())
