"""SQL for aggregates and providers' membership in them."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage.db import utcnow
from allotment.storage.tables import placement_aggregates, resource_provider_aggregates
from allotment.storage.topology import bump_topology

AGG = placement_aggregates
LINK = resource_provider_aggregates


def for_provider(conn: Connection, provider_id: int) -> list[str]:
    """UUIDs of the provider's aggregates, in a stable order."""
    return [u for (u,) in conn.execute(
        sa.select(AGG.c.uuid).join(LINK, LINK.c.aggregate_id == AGG.c.id)
        .where(LINK.c.resource_provider_id == provider_id).order_by(AGG.c.uuid))]


def for_providers(conn: Connection, provider_ids: Iterable[int]) -> dict[int, set[str]]:
    ids = sorted(set(provider_ids))
    if not ids:
        return {}
    result: dict[int, set[str]] = {}
    for provider_id, agg in conn.execute(
            sa.select(LINK.c.resource_provider_id, AGG.c.uuid)
            .join(AGG, LINK.c.aggregate_id == AGG.c.id)
            .where(LINK.c.resource_provider_id.in_(ids))):
        result.setdefault(provider_id, set()).add(agg)
    return result


def ensure(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """Ids of the aggregates, creating the missing ones.

    Aggregates exist only as UUIDs named by their members; two writers may
    create the same one at once, so a lost race just reads the winner's row.
    """
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    found = dict(conn.execute(
        sa.select(AGG.c.uuid, AGG.c.id).where(AGG.c.uuid.in_(wanted))).all())
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
    wanted = ensure(conn, uuids)
    current = dict(conn.execute(
        sa.select(AGG.c.uuid, AGG.c.id).join(LINK, LINK.c.aggregate_id == AGG.c.id)
        .where(LINK.c.resource_provider_id == provider_id)).all())
    gone = [agg_id for agg, agg_id in current.items() if agg not in wanted]
    if gone:
        conn.execute(sa.delete(LINK).where(LINK.c.resource_provider_id == provider_id,
                                           LINK.c.aggregate_id.in_(gone)))
    added = [agg_id for agg, agg_id in wanted.items() if agg not in current]
    if added:
        now = utcnow()
        conn.execute(sa.insert(LINK), [
            {"resource_provider_id": provider_id, "aggregate_id": agg_id, "created_at": now}
            for agg_id in added])
    if gone or added:
        bump_topology(conn)
