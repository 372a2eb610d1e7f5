"""SQL for resource providers and the trees they form.

Every function takes the caller's Connection and never opens a transaction,
so other use cases (allocations, the reshaper) can compose them inside their
own.  Rows returned by the lookups carry both internal ids and the UUIDs of
the parent and root, which is what every caller has needed so far:

    id, uuid, name, generation, root_provider_id, parent_provider_id,
    root_provider_uuid, parent_provider_uuid, created_at, updated_at
"""

from __future__ import annotations

import datetime
import functools
import re
from collections.abc import Iterable
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.storage import direct, feed
from allotment.storage.clock import utcnow
from allotment.storage.tables import (
    allocations,
    inventories,
    placement_feed_state,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
)

TABLE = resource_providers
_UUID_CHARS = re.compile(r"[0-9A-Za-z-]{1,36}")

CONCURRENT_UPDATE_MESSAGE = (
    "Another thread concurrently updated the resource provider data. "
    "Please retry your update")

# Key of the PostgreSQL advisory lock that serialises changes to the shape
# of provider trees (see lock_tree_shapes).
_TREE_LOCK_KEY = 0x616C6C6F  # "allo"


def _build_select() -> sa.Select:
    rp = TABLE
    root = TABLE.alias("root_rp")
    parent = TABLE.alias("parent_rp")
    return sa.select(
        rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation,
        rp.c.root_provider_id, rp.c.parent_provider_id,
        root.c.uuid.label("root_provider_uuid"),
        parent.c.uuid.label("parent_provider_uuid"),
        rp.c.created_at, rp.c.updated_at,
    ).select_from(
        rp.outerjoin(root, rp.c.root_provider_id == root.c.id)
        .outerjoin(parent, rp.c.parent_provider_id == parent.c.id))


# Built once: making the aliases anew for every query cost more than
# running the query.
_SELECT = _build_select()
_BY_UUID = _SELECT.where(TABLE.c.uuid == sa.bindparam("uuid"))
_BY_ID = _SELECT.where(TABLE.c.id == sa.bindparam("id"))
_BY_UUIDS = _SELECT.where(TABLE.c.uuid.in_(sa.bindparam("uuids", expanding=True)))
_BY_IDS = _SELECT.where(TABLE.c.id.in_(sa.bindparam("ids", expanding=True)))


def rows_select() -> sa.Select:
    """The statement of provider rows (parent's and root's UUIDs joined),
    for callers to narrow."""
    return _SELECT


def storable(uuid: object) -> bool:
    """Whether ``uuid`` could be in the uuid column at all.

    Anything else (NUL bytes, 300 characters ...) cannot match, and some
    databases refuse to even compare it, so it is never sent.
    """
    return isinstance(uuid, str) and _UUID_CHARS.fullmatch(uuid) is not None


def get_by_uuid(conn: Connection, uuid: str) -> Row | None:
    """The provider with this UUID, or None (also for malformed UUIDs)."""
    if not storable(uuid):
        return None
    return direct.execute(conn, _BY_UUID, {"uuid": uuid}).first()


def get_by_id(conn: Connection, provider_id: int) -> Row | None:
    return direct.execute(conn, _BY_ID, {"id": provider_id}).first()


def get_many_by_uuid(conn: Connection, uuids: Iterable[str]) -> dict[str, Row]:
    """Map each existing UUID among ``uuids`` to its row; unknown ones are absent."""
    wanted = sorted({u for u in uuids if storable(u)})
    if not wanted:
        return {}
    rows = conn.execute(_BY_UUIDS, {"uuids": wanted})
    return {row.uuid: row for row in rows}


def get_many_by_id(conn: Connection, ids: Iterable[int]) -> dict[int, Row]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    if len(wanted) <= direct.LISTED_UP_TO:
        rows = direct.execute(conn, _by_ids(len(wanted)), direct.listed("i", wanted))
    else:
        rows = conn.execute(_BY_IDS, {"ids": wanted})
    return {row.id: row for row in rows}


@functools.cache
def _by_ids(count: int) -> sa.Select:
    """get_many_by_id's statement for ``count`` ids, built once (a claim on
    MySQL reads the providers it locked this way)."""
    return _SELECT.where(direct.in_(TABLE.c.id, "i", count))


class ProviderRow(NamedTuple):
    """A provider as the SELECTs here return it, for rows known without one."""

    id: int
    uuid: str
    name: str
    generation: int
    root_provider_id: int
    parent_provider_id: int | None
    root_provider_uuid: str
    parent_provider_uuid: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def bump_generation(conn: Connection, provider_id: int, seen_generation: int) -> int:
    """Advance the provider's generation from ``seen_generation``.

    Raises errors.ConcurrentUpdate when the stored generation is no longer
    ``seen_generation`` (someone else changed the provider first).  On
    PostgreSQL the UPDATE takes the row lock, so a competing writer waits for
    us and then finds the generation moved: no update is ever lost.
    Returns the new generation.
    """
    return bump(conn, provider_id, seen_generation)[0]


# The statements of every write, built once: building a statement costs
# SQLAlchemy more than running it on SQLite.
_BUMP = (sa.update(TABLE)
         .where(TABLE.c.id == sa.bindparam("pid"), TABLE.c.generation == sa.bindparam("seen"))
         .values(generation=sa.bindparam("next_generation"), updated_at=sa.bindparam("now")))
_BUMP_RETURNING_ROOT = _BUMP.returning(TABLE.c.root_provider_id)
_INSERT = sa.insert(TABLE)
_SET_ROOT = (sa.update(TABLE).where(TABLE.c.id == sa.bindparam("pid"))
             .values(root_provider_id=sa.bindparam("root")))


@functools.cache
def _insert_once_postgresql() -> sa.Insert:
    """One statement that inserts a provider or, when its UUID or name is
    taken, nothing (no error, so no savepoint is needed to go on), taking
    the id from the table's sequence first so that a root can name itself
    as its root in the same row.  Made on first use: a server on another
    database never imports SQLAlchemy's PostgreSQL dialect (2 MB in every
    process)."""
    from sqlalchemy.dialects import postgresql

    new_id = sa.select(sa.func.nextval(sa.func.pg_get_serial_sequence(
        TABLE.name, TABLE.c.id.name)).label("id")).cte("new_id")
    root = sa.func.coalesce(sa.bindparam("root_provider_id", type_=sa.Integer), new_id.c.id)
    values = sa.select(
        new_id.c.id, sa.bindparam("uuid", type_=TABLE.c.uuid.type),
        sa.bindparam("name", type_=TABLE.c.name.type), sa.literal(0, sa.Integer), root,
        sa.bindparam("parent_provider_id", type_=sa.Integer),
        sa.bindparam("created_at", type_=TABLE.c.created_at.type))
    columns = ["id", "uuid", "name", "generation", "root_provider_id",
               "parent_provider_id", "created_at"]
    return (postgresql.insert(TABLE).from_select(columns, values)
            .on_conflict_do_nothing().returning(TABLE.c.id))



def bump(conn: Connection, provider_id: int,
         seen_generation: int) -> tuple[int, datetime.datetime]:
    """bump_generation, returning the new generation and ``updated_at``.

    The change feed learns which tree changed: where the database can say so
    from the UPDATE itself (under the row lock, so a concurrent move of the
    tree cannot make it stale), without a separate lookup when the
    transaction ends.  (An allocation write changes nothing a tree is read
    for, and advances its providers itself: storage.allocations.)
    """
    now = utcnow()
    params = {"pid": provider_id, "seen": seen_generation,
              "next_generation": seen_generation + 1, "now": now}
    if conn.dialect.update_returning:
        root = direct.execute(conn, _BUMP_RETURNING_ROOT, params).scalar()
        if root is None:
            raise errors.ConcurrentUpdate(CONCURRENT_UPDATE_MESSAGE)
        feed.note_root_of(conn, provider_id, root)
    else:
        if conn.execute(_BUMP, params).rowcount != 1:
            raise errors.ConcurrentUpdate(CONCURRENT_UPDATE_MESSAGE)
        feed.note_providers(conn, [provider_id])
    feed.note_generation(conn, provider_id, seen_generation + 1, now)
    return seen_generation + 1, now


def advanced(row: Row | ProviderRow, generation: int,
             updated_at: datetime.datetime) -> ProviderRow:
    """``row`` as it reads after a bump to ``generation`` at ``updated_at``."""
    fields = row._asdict() if isinstance(row, ProviderRow) else dict(row._mapping)
    return ProviderRow(**{**{f: fields[f] for f in ProviderRow._fields},
                          "generation": generation, "updated_at": updated_at})


_TREE_LOCK = sa.select(sa.func.pg_advisory_xact_lock(_TREE_LOCK_KEY))
# MySQL's guard row: a row of placement_feed_state apart from the feed's own
# (id 1), whose one column counts the changes of shape made.
_TREE_GUARD_ID = 2


@functools.cache
def _tree_guard() -> sa.Insert:
    # Made on first use, as _insert_once_postgresql: the MySQL dialect is
    # imported only by a server on MySQL.
    from sqlalchemy.dialects import mysql

    return (mysql.insert(placement_feed_state)
            .values(id=_TREE_GUARD_ID, pruned_below=1)
            .on_duplicate_key_update(pruned_below=placement_feed_state.c.pruned_below + 1))


def lock_tree_shapes(conn: Connection) -> None:
    """Serialise writers that change which provider is under which.

    Loop detection and the root ids of a moved subtree are only correct if no
    other writer reshapes the same trees meanwhile.  SQLite writers are
    already serial (BEGIN IMMEDIATE); PostgreSQL takes a transaction-scoped
    advisory lock.  On MySQL every such writer *writes* one guard row (a
    counter): on one server its row lock queues them until the commit or
    rollback, and on a Galera cluster, where a lock taken on one node means
    nothing to the others, the row is in every such writer's write set, so
    of two committing at once through two nodes certification aborts one (it
    is run again, and then sees the other's change).  A lock on a row that
    is only read would not be certified.
    """
    if conn.dialect.name == "postgresql":
        direct.execute(conn, _TREE_LOCK)
    elif conn.dialect.name == "mysql":
        conn.execute(_tree_guard())


_LOCKED_BY_UUIDS_OR_IDS = (
    _SELECT.where(sa.or_(TABLE.c.uuid.in_(sa.bindparam("uuids", expanding=True)),
                         TABLE.c.id.in_(sa.bindparam("ids", expanding=True))))
    .order_by(TABLE.c.id))
# PostgreSQL's for longer lists, with arrays: the same text whatever their
# length, so the statement may go straight to the driver.  Not for the
# usual claim: a prepared statement with array parameters is planned again
# at every execution (PostgreSQL's generic plan, which cannot know the
# arrays' lengths, always looks dearer than one made for them: about 240 us
# of the server's CPU a claim), where one parameter per value is planned
# once per connection (_locked_listed).
_LOCKED_BY_UUID_OR_ID_ARRAYS = (
    _SELECT.where(sa.or_(
        TABLE.c.uuid == sa.any_(sa.bindparam("uuids", type_=sa.ARRAY(TABLE.c.uuid.type))),
        TABLE.c.id == sa.any_(sa.bindparam("ids", type_=sa.ARRAY(sa.Integer)))))
    .order_by(TABLE.c.id).with_for_update(of=TABLE))


def lock_many(conn: Connection, *, uuids: Iterable[str] = (),
              ids: Iterable[int] = (), brief: bool = False) -> dict[int, Row]:
    """Row-lock the providers with these UUIDs or ids and read them, in one
    statement; returns the existing ones by id.

    What ``lock_rows`` followed by ``get_many_by_id`` does, in one round
    trip: rows are locked as they come out of the id-ordered scan, so two
    writers still lock in the same order.  SQLite writers are serial and
    need no row locks.  With ``brief`` the rows may hold only each
    provider's id, UUID and generation (all a claim needs): MySQL then
    locks and reads them in one statement instead of two.
    """
    wanted_uuids = sorted({u for u in uuids if storable(u)})
    wanted_ids = sorted(set(ids))
    if not wanted_uuids and not wanted_ids:
        return {}
    params = {"uuids": wanted_uuids, "ids": wanted_ids}
    backend = conn.dialect.name
    listed = (len(wanted_uuids) <= direct.LISTED_UP_TO
              and len(wanted_ids) <= direct.LISTED_UP_TO)
    brief = brief and backend == "mysql"
    if listed:
        statement = _locked_listed(backend, len(wanted_uuids), len(wanted_ids), brief)
        params = {**direct.listed("u", wanted_uuids), **direct.listed("i", wanted_ids)}
    if backend == "mysql":
        # MySQL would also lock the parent and root rows the query joins
        # (and MariaDB has no FOR UPDATE OF): lock the providers alone, and
        # read the rest of their rows after unless ``brief``.
        if not listed:
            statement = (sa.select(*(_BRIEF if brief else (TABLE.c.id,)))
                         .where(sa.or_(TABLE.c.uuid.in_(wanted_uuids),
                                       TABLE.c.id.in_(wanted_ids)))
                         .order_by(TABLE.c.id).with_for_update())
            params = {}
        rows = (direct.execute(conn, statement, params) if listed
                else conn.execute(statement, params))
        if brief:
            return {row.id: row for row in rows}
        return get_many_by_id(conn, rows.scalars())
    if listed:
        rows = direct.execute(conn, statement, params)
    elif backend == "postgresql":
        rows = direct.execute(conn, _LOCKED_BY_UUID_OR_ID_ARRAYS, params)
    else:
        rows = conn.execute(_LOCKED_BY_UUIDS_OR_IDS, params)
    return {row.id: row for row in rows}


# What a brief lock reads of each provider on MySQL.
_BRIEF = (TABLE.c.id, TABLE.c.uuid, TABLE.c.generation)


@functools.cache
def _locked_listed(backend: str, uuids: int, ids: int, brief: bool = False) -> sa.Select:
    """lock_many's statement for so many UUIDs and ids, built once (a claim
    locks this way): on PostgreSQL the rows, locked; on MySQL the ids alone
    (``brief``: ids, UUIDs and generations), locked; on SQLite, whose
    writers are serial, the rows."""
    where = sa.or_(direct.in_(TABLE.c.uuid, "u", uuids), direct.in_(TABLE.c.id, "i", ids))
    if backend == "mysql":
        return (sa.select(*(_BRIEF if brief else (TABLE.c.id,))).where(where)
                .order_by(TABLE.c.id).with_for_update())
    if backend == "postgresql":
        return _SELECT.where(where).order_by(TABLE.c.id).with_for_update(of=TABLE)
    return _SELECT.where(where).order_by(TABLE.c.id)


_LOCKED_BY_UUID = _BY_UUID.with_for_update(of=TABLE)


def lock_by_uuid(conn: Connection, uuid: str) -> Row | None:
    """get_by_uuid, row-locking the provider: ``lock_many`` for one UUID,
    in a statement that stays the same (so it is kept prepared)."""
    if conn.dialect.name != "postgresql":
        return next(iter(lock_many(conn, uuids=[uuid]).values()), None)
    if not storable(uuid):
        return None
    return direct.execute(conn, _LOCKED_BY_UUID, {"uuid": uuid}).first()


def lock_rows(conn: Connection, provider_ids: Iterable[int]) -> None:
    """Row-lock providers (in id order, so two writers cannot deadlock)."""
    ids = sorted(set(provider_ids))
    if ids and conn.dialect.name != "sqlite":
        conn.execute(sa.select(TABLE.c.id).where(TABLE.c.id.in_(ids))
                     .order_by(TABLE.c.id).with_for_update())


def uuid_taken(conn: Connection, uuid: str) -> bool:
    return conn.execute(sa.select(TABLE.c.id).where(TABLE.c.uuid == uuid)).first() is not None


def name_taken(conn: Connection, name: str, *, except_id: int | None = None) -> bool:
    query = sa.select(TABLE.c.id).where(TABLE.c.name == name)
    if except_id is not None:
        query = query.where(TABLE.c.id != except_id)
    return conn.execute(query).first() is not None


def create(conn: Connection, *, uuid: str, name: str,
           parent: Row | None = None) -> ProviderRow | None:
    """Insert a provider (a root, or a child of ``parent``).

    Returns None when the UUID or name is already taken (the caller finds
    out which for the message).  The caller's transaction stays usable
    after that: on PostgreSQL the insert skips a conflicting row instead of
    failing, elsewhere a savepoint takes the unique violation.  The new row
    is known without reading it back.
    """
    now = utcnow()
    params = {"uuid": uuid, "name": name, "created_at": now,
              "parent_provider_id": parent.id if parent is not None else None,
              "root_provider_id": parent.root_provider_id if parent is not None else None}
    if conn.dialect.name == "postgresql":
        # One round trip instead of four (savepoint, insert, root, release).
        new_id = direct.execute(conn, _insert_once_postgresql(), params).scalar()
        if new_id is None:
            return None
    else:
        try:
            with conn.begin_nested():
                result = conn.execute(_INSERT, {**params, "generation": 0})
                new_id = result.inserted_primary_key[0]
                if parent is None:
                    # A root is its own root; its id is only known now.
                    conn.execute(_SET_ROOT, {"pid": new_id, "root": new_id})
        except sa.exc.IntegrityError:
            return None
    feed.note_roots(conn, [parent.root_provider_id if parent is not None else new_id])
    if parent is None:
        return ProviderRow(new_id, uuid, name, 0, new_id, None, uuid, None, now, None)
    return ProviderRow(new_id, uuid, name, 0, parent.root_provider_id, parent.id,
                       parent.root_provider_uuid, parent.uuid, now, None)


def rename(conn: Connection, provider_id: int, name: str) -> bool:
    """False when another provider has the name."""
    try:
        with conn.begin_nested():
            conn.execute(sa.update(TABLE).where(TABLE.c.id == provider_id)
                         .values(name=name, updated_at=utcnow()))
    except sa.exc.IntegrityError:
        return False
    feed.note_providers(conn, [provider_id])
    return True


def touch(conn: Connection, provider_id: int) -> None:
    conn.execute(sa.update(TABLE).where(TABLE.c.id == provider_id)
                 .values(updated_at=utcnow()))
    feed.note_providers(conn, [provider_id])


def subtree_ids(conn: Connection, provider: Row) -> list[int]:
    """``provider`` and all its descendants, parents before children."""
    children: dict[int, list[int]] = {}
    for row in conn.execute(
            sa.select(TABLE.c.id, TABLE.c.parent_provider_id)
            .where(TABLE.c.root_provider_id == provider.root_provider_id)):
        if row.parent_provider_id is not None:
            children.setdefault(row.parent_provider_id, []).append(row.id)
    ordered = [provider.id]
    for current in ordered:  # grows while we walk it: breadth first
        ordered.extend(sorted(children.get(current, ())))
    return ordered


def set_parent(conn: Connection, provider: Row, parent: Row | None) -> None:
    """Move ``provider`` (and its whole subtree) under ``parent`` or to the top.

    The caller has ruled out loops.  Every descendant's root id follows.
    """
    new_root = parent.root_provider_id if parent is not None else provider.id
    members = subtree_ids(conn, provider)
    now = utcnow()
    conn.execute(sa.update(TABLE).where(TABLE.c.id == provider.id).values(
        parent_provider_id=parent.id if parent is not None else None,
        root_provider_id=new_root, updated_at=now))
    others = [m for m in members if m != provider.id]
    if others:
        conn.execute(sa.update(TABLE).where(TABLE.c.id.in_(others))
                     .values(root_provider_id=new_root))
    feed.note_roots(conn, [provider.root_provider_id, new_root])


def has_children(conn: Connection, provider_id: int) -> bool:
    return conn.execute(
        sa.select(TABLE.c.id).where(TABLE.c.parent_provider_id == provider_id).limit(1)
    ).first() is not None


def has_allocations(conn: Connection, provider_id: int) -> bool:
    return conn.execute(
        sa.select(allocations.c.id)
        .where(allocations.c.resource_provider_id == provider_id).limit(1)
    ).first() is not None


def delete(conn: Connection, provider_id: int) -> bool:
    """Remove a childless, allocation-free provider and what hangs off it.

    Returns False when a child appeared meanwhile (the foreign key refuses).
    """
    root_id = conn.execute(sa.select(TABLE.c.root_provider_id)
                           .where(TABLE.c.id == provider_id)).scalar()
    for table in (inventories, resource_provider_aggregates, resource_provider_traits):
        conn.execute(sa.delete(table).where(table.c.resource_provider_id == provider_id))
    try:
        with conn.begin_nested():
            # A root points at itself; break that before deleting the row.
            conn.execute(sa.update(TABLE).where(TABLE.c.id == provider_id,
                                                TABLE.c.root_provider_id == provider_id)
                         .values(root_provider_id=None))
            conn.execute(sa.delete(TABLE).where(TABLE.c.id == provider_id))
    except sa.exc.IntegrityError:
        return False
    feed.note_roots(conn, [root_id])
    return True
