"""SQL for allocations: reads for the API, and the pieces of a write.

Functions take the caller's Connection and never open a transaction.  The
service composes them into one write transaction per request.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import direct, feed
from allotment.storage.clock import utcnow
from allotment.storage.db import storable_text
from allotment.storage.tables import (
    allocations,
    consumer_types,
    consumers,
    inventories,
    projects,
    resource_classes,
    resource_providers,
    users,
)

TABLE = allocations

# Keys of the maps below: (resource_provider_id, resource_class_id).
Pair = tuple[int, int]


# One consumer's allocations, built once: a statement built per call costs
# SQLAlchemy more than the read itself, and a built one goes to the driver
# directly (storage/direct.py).  The scheduler asks this before every claim
# and every move.
_FOR_CONSUMER = sa.select(
    resource_providers.c.uuid.label("provider_uuid"),
    resource_providers.c.generation.label("provider_generation"),
    resource_classes.c.name.label("resource_class"),
    TABLE.c.used, TABLE.c.created_at, TABLE.c.updated_at,
    consumers.c.generation.label("consumer_generation"),
    projects.c.external_id.label("project_external_id"),
    users.c.external_id.label("user_external_id"),
    consumer_types.c.name.label("consumer_type"),
).select_from(
    TABLE.join(consumers, TABLE.c.consumer_id == consumers.c.uuid)
    .join(resource_providers, TABLE.c.resource_provider_id == resource_providers.c.id)
    .join(resource_classes, TABLE.c.resource_class_id == resource_classes.c.id)
    .join(projects, consumers.c.project_id == projects.c.id)
    .join(users, consumers.c.user_id == users.c.id)
    .outerjoin(consumer_types, consumers.c.consumer_type_id == consumer_types.c.id)
).where(consumers.c.uuid == sa.bindparam("uuid")).order_by(TABLE.c.id)


def for_consumer(conn: Connection, consumer_uuid: str) -> list[Row]:
    """Every allocation of one consumer, with its provider and owner: one
    statement, so one consistent snapshot even outside a transaction.

    Rows: provider_uuid, provider_generation, resource_class, used,
    created_at, updated_at, consumer_generation, project_external_id,
    user_external_id, consumer_type.
    """
    if not storable_text(consumer_uuid):
        return []
    return list(direct.execute(conn, _FOR_CONSUMER, {"uuid": consumer_uuid}))


def for_provider(conn: Connection, provider_id: int) -> list[Row]:
    """Every allocation against one provider.

    Rows: consumer_uuid, consumer_generation, resource_class, used,
    created_at, updated_at.
    """
    query = sa.select(
        consumers.c.uuid.label("consumer_uuid"),
        consumers.c.generation.label("consumer_generation"),
        resource_classes.c.name.label("resource_class"),
        TABLE.c.used, TABLE.c.created_at, TABLE.c.updated_at,
    ).select_from(
        TABLE.join(consumers, TABLE.c.consumer_id == consumers.c.uuid)
        .join(resource_classes, TABLE.c.resource_class_id == resource_classes.c.id)
    ).where(TABLE.c.resource_provider_id == provider_id).order_by(TABLE.c.id)
    return list(conn.execute(query))


def _provider_with_allocations(*detail: sa.ColumnElement) -> sa.Select:
    """A provider's generation and its allocations in one statement: the row
    of a provider without allocations has NULLs for the rest.

    No ORDER BY: the allocations' order (their ids) is not the order of the
    index the rows are found by (provider, class, amount), so MySQL and
    MariaDB would put every answer through a temporary table and a sort.
    The rows carry the allocation id, and the caller sorts them.

    The joins are one flat chain of outer joins, not the provider outer-
    joined to a nested join: SQLite materialises a nested join's right side
    whole (every allocation of every provider, tens of ms at 1,000 hosts)
    before it looks for the provider.  An allocation always has its consumer
    and its class, so the outer joins past it add no row an inner join
    would not."""
    return sa.select(
        resource_providers.c.generation.label("provider_generation"),
        TABLE.c.id.label("allocation_id"),
        consumers.c.uuid.label("consumer_uuid"),
        resource_classes.c.name.label("resource_class"),
        TABLE.c.used, *detail,
    ).select_from(
        resource_providers
        .outerjoin(TABLE, TABLE.c.resource_provider_id == resource_providers.c.id)
        .outerjoin(consumers, TABLE.c.consumer_id == consumers.c.uuid)
        .outerjoin(resource_classes, TABLE.c.resource_class_id == resource_classes.c.id)
    ).where(resource_providers.c.uuid == sa.bindparam("uuid"))


# Every column an answer may show (consumer generations from 1.28, the
# last-modified stamp from 1.15) ...
_PROVIDER_WITH_ALLOCATIONS = _provider_with_allocations(
    consumers.c.generation.label("consumer_generation"),
    TABLE.c.created_at, TABLE.c.updated_at)
# ... and only the amounts, for older microversions (nova's resource
# tracker reads at 1.0 every period): each column is a packet more for a
# pure-Python driver to read for every row, and dates are parsed in Python.
_PROVIDER_WITH_AMOUNTS = _provider_with_allocations()
_BY_ALLOCATION_ID = operator.itemgetter(1)


def provider_with_allocations(conn: Connection, uuid: str, *,
                              detail: bool = True) -> tuple[int, list[Row]] | None:
    """(generation, rows) of the provider with this UUID, or None if there
    is none: one statement, so one consistent snapshot even outside a
    transaction.  Rows, in the allocations' order: allocation_id,
    consumer_uuid, resource_class, used and, with ``detail``,
    consumer_generation, created_at and updated_at."""
    statement = _PROVIDER_WITH_ALLOCATIONS if detail else _PROVIDER_WITH_AMOUNTS
    rows = list(direct.execute(conn, statement, {"uuid": uuid}))
    if not rows:
        return None
    held = [r for r in rows if r.consumer_uuid is not None]
    held.sort(key=_BY_ALLOCATION_ID)
    return rows[0].provider_generation, held


def of_consumers(conn: Connection, consumer_uuids: Iterable[str]) -> list[Row]:
    """Allocation rows (consumer_id, resource_provider_id, resource_class_id,
    resource_class, used) of some consumers; consumer_id is the UUID."""
    ids = sorted(set(consumer_uuids))
    if not ids:
        return []
    if len(ids) <= direct.LISTED_UP_TO:
        return list(direct.execute(conn, _of_consumers(len(ids)), direct.listed("c", ids)))
    return list(conn.execute(_OF_CONSUMERS.where(TABLE.c.consumer_id.in_(ids))
                             .order_by(TABLE.c.id)))


_OF_CONSUMERS = sa.select(
    TABLE.c.consumer_id, TABLE.c.resource_provider_id,
    TABLE.c.resource_class_id, resource_classes.c.name.label("resource_class"),
    TABLE.c.used,
).select_from(
    TABLE.join(resource_classes, TABLE.c.resource_class_id == resource_classes.c.id))


@functools.cache
def _of_consumers(count: int) -> sa.Select:
    """of_consumers for ``count`` consumers, built once (a move empties one)."""
    return (_OF_CONSUMERS.where(direct.in_(TABLE.c.consumer_id, "c", count))
            .order_by(TABLE.c.id))


def usage(conn: Connection, provider_ids: Iterable[int],
          class_ids: Iterable[int]) -> dict[Pair, int]:
    """Total used per (provider, class), over every consumer."""
    pids, cids = sorted(set(provider_ids)), sorted(set(class_ids))
    if not pids or not cids:
        return {}
    query = sa.select(
        TABLE.c.resource_provider_id, TABLE.c.resource_class_id,
        sa.func.sum(TABLE.c.used),
    ).where(
        TABLE.c.resource_provider_id.in_(pids), TABLE.c.resource_class_id.in_(cids),
    ).group_by(TABLE.c.resource_provider_id, TABLE.c.resource_class_id)
    return {(pid, cid): int(used) for pid, cid, used in conn.execute(query)}


def inventory(conn: Connection, provider_ids: Iterable[int],
              class_ids: Iterable[int]) -> dict[Pair, Row]:
    """The inventory records an allocation is checked against.

    Rows: total, reserved, min_unit, max_unit, step_size, allocation_ratio.
    """
    pids, cids = sorted(set(provider_ids)), sorted(set(class_ids))
    if not pids or not cids:
        return {}
    inv = inventories
    query = sa.select(
        inv.c.resource_provider_id, inv.c.resource_class_id, inv.c.total,
        inv.c.reserved, inv.c.min_unit, inv.c.max_unit, inv.c.step_size,
        inv.c.allocation_ratio,
    ).where(inv.c.resource_provider_id.in_(pids), inv.c.resource_class_id.in_(cids))
    return {(r.resource_provider_id, r.resource_class_id): r for r in conn.execute(query)}


_HELD = (
    sa.select(sa.func.coalesce(sa.func.sum(TABLE.c.used), 0))
    .where(TABLE.c.resource_provider_id == inventories.c.resource_provider_id,
           TABLE.c.resource_class_id == inventories.c.resource_class_id)
    .scalar_subquery())
_LIMITS_OF = sa.select(
    inventories.c.resource_provider_id, inventories.c.resource_class_id,
    inventories.c.total, inventories.c.reserved, inventories.c.min_unit,
    inventories.c.max_unit, inventories.c.step_size, inventories.c.allocation_ratio,
    _HELD,
)
# A claim's providers' inventories, every class of them (the caller's
# classes are picked out here): on PostgreSQL a filter on the classes too
# makes the plan made for the values look cheaper than the one kept for the
# statement (it knows how many of the values' rows there are), so the
# statement was planned again at every claim, about 175 us of the server's
# CPU.  A provider has a handful of inventories.
_LIMITS = _LIMITS_OF.where(
    inventories.c.resource_provider_id.in_(sa.bindparam("pids", expanding=True)))
# PostgreSQL's for longer lists, with an array: one text whatever the
# length, so it may go straight to the driver.  Shorter lists (a claim's)
# take one parameter per value, as elsewhere: with an array the statement is
# planned again at every execution (see resource_providers._locked_listed).
_LIMITS_ARRAYS = _LIMITS_OF.where(
    inventories.c.resource_provider_id == sa.any_(sa.bindparam("pids",
                                                               type_=sa.ARRAY(sa.Integer))))


@functools.cache
def _limits_listed(pids: int) -> sa.Select:
    """One statement per number of providers (up to ``direct.LISTED_UP_TO``)."""
    return _LIMITS_OF.where(direct.in_(inventories.c.resource_provider_id, "p", pids))


def limits_and_usage(conn: Connection, provider_ids: Iterable[int],
                     class_ids: Iterable[int]) -> dict[Pair, tuple[Row, int]]:
    """Per (provider, class) with inventory: the inventory record and what is
    used of it now, in one statement.

    Rows: total, reserved, min_unit, max_unit, step_size, allocation_ratio.
    """
    pids, cids = sorted(set(provider_ids)), sorted(set(class_ids))
    if not pids or not cids:
        return {}
    found = {}
    if len(pids) <= direct.LISTED_UP_TO:
        rows = direct.execute(conn, _limits_listed(len(pids)), direct.listed("p", pids))
    elif conn.dialect.name == "postgresql":
        rows = direct.execute(conn, _LIMITS_ARRAYS, {"pids": pids})
    else:
        rows = conn.execute(_LIMITS, {"pids": pids})
    wanted = set(cids)
    for row in rows:
        if row[1] in wanted:
            found[(row[0], row[1])] = (row, int(row[8]))
    return found


# One consumer's (every DELETE /allocations): a statement built once, which
# may go straight to the driver.
_HELD_COLUMNS = (TABLE.c.resource_provider_id, TABLE.c.resource_class_id, TABLE.c.used)
_DELETE_ONE = (sa.delete(TABLE).where(TABLE.c.consumer_id == sa.bindparam("consumer"))
               .returning(*_HELD_COLUMNS))


@functools.cache
def _delete_listed(count: int, returning: bool) -> tuple[sa.Select | None, sa.Delete]:
    """Deleting ``count`` consumers' allocations: the DELETE, returning what
    they held where the database can (else a locking read of it first)."""
    where = direct.in_(TABLE.c.consumer_id, "c", count)
    if returning:
        return None, sa.delete(TABLE).where(where).returning(*_HELD_COLUMNS)
    return (sa.select(*_HELD_COLUMNS).where(where).with_for_update(),
            sa.delete(TABLE).where(where))


def delete_of_consumers(conn: Connection, consumer_uuids: Iterable[str]) -> dict[Pair, int]:
    """Remove the consumers' allocations; returns what they held, summed per
    (provider, class), for the change feed's usage deltas."""
    ids = sorted({uuid for uuid in consumer_uuids if storable_text(uuid)})
    if not ids:
        return {}
    held: dict[Pair, int] = {}
    if conn.dialect.delete_returning and len(ids) == 1:
        rows = direct.execute(conn, _DELETE_ONE, {"consumer": ids[0]})
    elif len(ids) <= direct.LISTED_UP_TO:
        read, delete = _delete_listed(len(ids), conn.dialect.delete_returning)
        params = direct.listed("c", ids)
        rows = list(direct.execute(conn, read or delete, params))
        if read is not None:
            direct.execute(conn, delete, params)
    elif conn.dialect.delete_returning:
        rows = conn.execute(sa.delete(TABLE).where(TABLE.c.consumer_id.in_(ids))
                            .returning(*_HELD_COLUMNS))
    else:
        where = TABLE.c.consumer_id.in_(ids)
        rows = conn.execute(sa.select(*_HELD_COLUMNS).where(where).with_for_update()).all()
        conn.execute(sa.delete(TABLE).where(where))
    for pid, cid, used in rows:
        held[(pid, cid)] = held.get((pid, cid), 0) + used
    return held


def insert(conn: Connection, consumer_uuid: str,
           amounts: Mapping[Pair, int]) -> None:
    """Add one consumer's allocations: {(provider_id, class_id): used}.

    The change feed learns of them from the caller, which knows the net
    change once old allocations are gone too (see :func:`note_usage`).
    """
    if not amounts:
        return
    now = utcnow()
    rows = sorted(amounts.items())
    if conn.dialect.name == "postgresql":
        direct.execute(conn, _INSERT_ARRAYS, {
            "consumer": consumer_uuid, "now": now, "pids": [pid for (pid, _), _ in rows],
            "cids": [cid for (_, cid), _ in rows], "used": [used for _, used in rows]})
        return
    if len(rows) <= direct.LISTED_UP_TO:
        params = {"consumer": consumer_uuid, "now": now}
        for k, ((pid, cid), used) in enumerate(rows):
            params[f"p_{k}"], params[f"c_{k}"], params[f"u_{k}"] = pid, cid, used
        direct.execute(conn, _insert_listed(len(rows)), params)
        return
    conn.execute(sa.insert(TABLE), [
        {"consumer_id": consumer_uuid, "resource_provider_id": pid,
         "resource_class_id": cid, "used": used, "created_at": now}
        for (pid, cid), used in rows
    ])


@functools.cache
def _insert_listed(count: int) -> sa.Insert:
    """Off PostgreSQL: one multi-row INSERT per number of rows, each value
    bound as a parameter of its own (``p_k``, ``c_k``, ``u_k``)."""
    consumer = sa.bindparam("consumer", type_=TABLE.c.consumer_id.type)
    now = sa.bindparam("now", type_=TABLE.c.created_at.type)
    return sa.insert(TABLE).values([
        {"consumer_id": consumer, "created_at": now,
         "resource_provider_id": sa.bindparam(f"p_{k}", type_=sa.Integer),
         "resource_class_id": sa.bindparam(f"c_{k}", type_=sa.Integer),
         "used": sa.bindparam(f"u_{k}", type_=sa.Integer)}
        for k in range(count)])


def _insert_arrays() -> sa.Insert:
    """PostgreSQL's insert of one consumer's allocations, the rows given as
    arrays: one statement of one text however many rows (SQLAlchemy's
    many-rows insert is built anew for each count and cannot go straight to
    the driver); ``unnest`` keeps the arrays' order, which is the ids'."""
    given = sa.func.unnest(
        sa.bindparam("pids", type_=sa.ARRAY(sa.Integer)),
        sa.bindparam("cids", type_=sa.ARRAY(sa.Integer)),
        sa.bindparam("used", type_=sa.ARRAY(sa.Integer)),
    ).table_valued("pid", "cid", "used").render_derived()
    rows = sa.select(
        sa.bindparam("consumer", type_=TABLE.c.consumer_id.type), given.c.pid,
        given.c.cid, given.c.used, sa.bindparam("now", type_=TABLE.c.created_at.type))
    return sa.insert(TABLE).from_select(
        ["consumer_id", "resource_provider_id", "resource_class_id", "used", "created_at"],
        rows)


_INSERT_ARRAYS = _insert_arrays()


def note_usage(conn: Connection, removed: Mapping[Pair, int],
               added: Mapping[Pair, int]) -> None:
    """Tell the change feed how usage moved: ``added`` minus ``removed``."""
    deltas = {key: -used for key, used in removed.items()}
    for key, used in added.items():
        deltas[key] = deltas.get(key, 0) + used
    feed.note_usage(conn, deltas)


def _advance(count: int) -> sa.Update:
    """The UPDATE that moves ``count`` providers one generation on, each
    only from the generation it was read at (bound as ``id_k``/``seen_k``):
    built once for up to ``direct.LISTED_UP_TO`` providers, afresh for more
    (whose plans would pile up)."""
    if count <= direct.LISTED_UP_TO:
        return _advance_kept(count)
    return _build_advance(count)


def _build_advance(count: int) -> sa.Update:
    rp = resource_providers
    ids = [sa.bindparam(f"id_{k}", type_=sa.Integer) for k in range(count)]
    seen = sa.case(*((rp.c.id == ids[k], sa.bindparam(f"seen_{k}", type_=sa.Integer))
                     for k in range(count)))
    return (sa.update(rp).where(rp.c.id.in_(ids), rp.c.generation == seen)
            .values(generation=rp.c.generation + 1, updated_at=sa.bindparam("now")))


_advance_kept = functools.cache(_build_advance)


def advance_providers(conn: Connection, seen: Mapping[int, int]) -> bool:
    """Move the providers an allocation write touched one generation on
    from the generations in ``seen`` (provider id -> generation read), in
    one statement; False, and nothing moved that counts, when any had
    moved already (the caller rolls back).

    The feed notes the generations alone: allocations change nothing a
    provider's tree is read for (their usage goes as deltas, see
    :func:`note_usage`), so no process reads the tree again for them.
    """
    if not seen:
        return True
    now = utcnow()
    params: dict = {"now": now}
    for k, (pid, generation) in enumerate(sorted(seen.items())):
        params[f"id_{k}"], params[f"seen_{k}"] = pid, generation
    statement = _advance(len(seen))
    moved = (direct.execute(conn, statement, params) if len(seen) <= direct.LISTED_UP_TO
             else conn.execute(statement, params))
    if moved.rowcount != len(seen):
        return False
    for pid, generation in seen.items():
        feed.note_generation(conn, pid, generation + 1, now)
    return True


def _owned_by(project_external_id: str, user_external_id: str | None):
    joined = (
        TABLE.join(consumers, TABLE.c.consumer_id == consumers.c.uuid)
        .join(projects, consumers.c.project_id == projects.c.id)
        .outerjoin(consumer_types, consumers.c.consumer_type_id == consumer_types.c.id)
    )
    where = [projects.c.external_id == project_external_id]
    if user_external_id is not None:
        joined = joined.join(users, consumers.c.user_id == users.c.id)
        where.append(users.c.external_id == user_external_id)
    return joined, where


def usages_of_project(conn: Connection, project_external_id: str,
                      user_external_id: str | None = None) -> list[Row]:
    """Used per (consumer type, class) for a project, optionally one user.

    Rows: consumer_type (None for consumers without a type), resource_class,
    used.
    """
    joined, where = _owned_by(project_external_id, user_external_id)
    query = sa.select(
        consumer_types.c.name.label("consumer_type"),
        resource_classes.c.name.label("resource_class"),
        sa.func.sum(TABLE.c.used).label("used"),
    ).select_from(
        joined.join(resource_classes, TABLE.c.resource_class_id == resource_classes.c.id)
    ).where(*where).group_by(consumer_types.c.name, resource_classes.c.name)
    return list(conn.execute(query))


def consumer_counts_of_project(conn: Connection, project_external_id: str,
                               user_external_id: str | None = None
                               ) -> dict[str | None, int]:
    """Distinct consumers holding allocations, per consumer type (None: no
    type).  Counted apart from the sums so that a consumer of several
    classes counts once."""
    joined, where = _owned_by(project_external_id, user_external_id)
    query = sa.select(
        consumer_types.c.name, sa.func.count(sa.distinct(TABLE.c.consumer_id)),
    ).select_from(joined).where(*where).group_by(consumer_types.c.name)
    return {name: int(count) for name, count in conn.execute(query)}
