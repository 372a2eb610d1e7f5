"""SQL for consumers and the projects, users and consumer types they name.

Functions take the caller's Connection and never open a transaction, so the
allocation writers and the reshaper compose them inside their own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from allotment.storage import direct
from allotment.storage.clock import utcnow
from allotment.storage.db import storable_text
from allotment.storage.tables import (
    allocations,
    consumer_types,
    consumers,
    projects,
    users,
)

TABLE = consumers


def _select() -> sa.Select:
    return sa.select(
        TABLE.c.id, TABLE.c.uuid, TABLE.c.generation,
        TABLE.c.project_id, TABLE.c.user_id, TABLE.c.consumer_type_id,
        projects.c.external_id.label("project_external_id"),
        users.c.external_id.label("user_external_id"),
        consumer_types.c.name.label("consumer_type"),
        TABLE.c.created_at, TABLE.c.updated_at,
    ).select_from(
        TABLE.join(projects, TABLE.c.project_id == projects.c.id)
        .join(users, TABLE.c.user_id == users.c.id)
        .outerjoin(consumer_types, TABLE.c.consumer_type_id == consumer_types.c.id))


# Built once: building a statement costs SQLAlchemy more than running it.
# One consumer (every claim) has a statement of its own, which needs no
# expanding of a list and so may go straight to the driver.
_BY_UUID = _select().where(TABLE.c.uuid == sa.bindparam("uuid"))
_BY_UUIDS = _select().where(TABLE.c.uuid.in_(sa.bindparam("uuids", expanding=True)))


def get_many_by_uuid(conn: Connection, uuids: Iterable[str]) -> dict[str, Row]:
    """Map each existing consumer UUID among ``uuids`` to its row.

    Rows carry id, uuid, generation, project_id, user_id, consumer_type_id,
    project_external_id, user_external_id and consumer_type (None when the
    consumer predates consumer types).
    """
    wanted = sorted({uuid for uuid in uuids if storable_text(uuid)})
    if not wanted:
        return {}
    if len(wanted) == 1:
        rows = direct.execute(conn, _BY_UUID, {"uuid": wanted[0]})
    elif len(wanted) <= direct.LISTED_UP_TO:
        rows = direct.execute(conn, _by_uuids(len(wanted)), direct.listed("u", wanted))
    else:
        rows = conn.execute(_BY_UUIDS, {"uuids": wanted})
    return {row.uuid: row for row in rows}


@functools.cache
def _by_uuids(count: int) -> sa.Select:
    """Several consumers (a move names two), one statement per count."""
    return _select().where(direct.in_(TABLE.c.uuid, "u", count))


def _ensure_external(conn: Connection, table: sa.Table, column: str, value: str) -> int:
    """The id of the row whose ``column`` is ``value``, inserting it if needed.

    A concurrent writer may insert the same value first: the savepoint keeps
    our transaction usable after the unique violation and we read theirs.
    """
    col = table.c[column]
    found = conn.execute(sa.select(table.c.id).where(col == value)).scalar()
    if found is not None:
        return found
    try:
        with conn.begin_nested():
            conn.execute(sa.insert(table).values({column: value, "created_at": utcnow()}))
    except sa.exc.IntegrityError:
        pass
    return conn.execute(sa.select(table.c.id).where(col == value)).scalar_one()


_OWNER_IDS = sa.select(
    sa.select(projects.c.id).where(projects.c.external_id == sa.bindparam("project"))
    .scalar_subquery().label("owner_project_id"),
    sa.select(users.c.id).where(users.c.external_id == sa.bindparam("user"))
    .scalar_subquery().label("owner_user_id"),
    sa.select(consumer_types.c.id).where(consumer_types.c.name == sa.bindparam("type"))
    .scalar_subquery().label("owner_type_id"))

# One consumer and the ids of the owner a write names for it, in one
# statement (every claim of nova's scheduler is one consumer): the owner's
# one row, with the consumer's beside it when it exists.  Of the consumer
# only what a write checks and changes: the names of its owner would cost
# three joins, and every column costs the driver a description to read on
# MySQL (PyMySQL parses each in Python, about 20 us).
_OWNER = _OWNER_IDS.subquery("owner")
_FOUND = sa.select(
    TABLE.c.id, TABLE.c.uuid, TABLE.c.generation,
    TABLE.c.project_id, TABLE.c.user_id, TABLE.c.consumer_type_id,
).where(TABLE.c.uuid == sa.bindparam("uuid")).subquery("found")
_BY_UUID_WITH_OWNER = sa.select(_OWNER, _FOUND).select_from(
    _OWNER.outerjoin(_FOUND, sa.true()))

OwnerIds = tuple[int | None, int | None, int | None]


def get_with_owner(conn: Connection, uuid: str, project: str, user: str,
                   consumer_type: str | None) -> tuple[Row | None, OwnerIds]:
    """The consumer ``uuid``'s id, uuid, generation, project_id, user_id and
    consumer_type_id (None when it does not exist), and the ids of
    ``project``, ``user`` and ``consumer_type`` (None for each one not
    recorded yet): one round trip where reading the consumer and then
    :func:`ensure_owner` take two."""
    if not storable_text(uuid):
        return None, direct.execute(conn, _OWNER_IDS, _owner_params(
            project, user, consumer_type)).first()
    found = direct.execute(conn, _BY_UUID_WITH_OWNER, {
        "uuid": uuid, **_owner_params(project, user, consumer_type)}).first()
    owner = (found.owner_project_id, found.owner_user_id, found.owner_type_id)
    return (found if found.id is not None else None), owner


def _owner_params(project: str, user: str, consumer_type: str | None) -> dict[str, str]:
    return {"project": project, "user": user, "type": consumer_type or ""}


def ensure_owner(conn: Connection, project: str, user: str,
                 consumer_type: str | None, *, read: OwnerIds | None = None,
                 ) -> tuple[int, int, int | None]:
    """Ids of the project, user and consumer type (None: no type), each
    inserted when missing.  One round trip when they all exist, which after
    a consumer's first write they always do; none when the caller ``read``
    them already (:func:`get_with_owner`).  Projects, users and types are
    never removed, so ids read earlier in the transaction still hold."""
    if read is None:
        read = direct.execute(conn, _OWNER_IDS, _owner_params(
            project, user, consumer_type)).first()
    project_id, user_id, type_id = read
    if project_id is None:
        project_id = ensure_project(conn, project)
    if user_id is None:
        user_id = ensure_user(conn, user)
    if consumer_type is None:
        type_id = None
    elif type_id is None:
        type_id = ensure_consumer_type(conn, consumer_type)
    return project_id, user_id, type_id


def ensure_project(conn: Connection, external_id: str) -> int:
    return _ensure_external(conn, projects, "external_id", external_id)


def ensure_user(conn: Connection, external_id: str) -> int:
    return _ensure_external(conn, users, "external_id", external_id)


def ensure_consumer_type(conn: Connection, name: str) -> int:
    return _ensure_external(conn, consumer_types, "name", name)


_CREATE = sa.insert(TABLE).values(
    uuid=sa.bindparam("uuid"), project_id=sa.bindparam("project_id"),
    user_id=sa.bindparam("user_id"), consumer_type_id=sa.bindparam("consumer_type_id"),
    generation=sa.bindparam("generation"), created_at=sa.bindparam("created_at"))
_CREATE_RETURNING_ID = _CREATE.returning(TABLE.c.id)


def create(conn: Connection, *, uuid: str, project_id: int, user_id: int,
           consumer_type_id: int | None, generation: int = 0) -> int:
    """Insert a consumer; returns its id.

    A racing insert of the same UUID raises sqlalchemy IntegrityError, which
    the caller treats as "retry the whole write".
    """
    params = {"uuid": uuid, "project_id": project_id, "user_id": user_id,
              "consumer_type_id": consumer_type_id, "generation": generation,
              "created_at": utcnow()}
    if conn.dialect.insert_returning:
        return direct.execute(conn, _CREATE_RETURNING_ID, params).scalar()
    return conn.execute(_CREATE, params).inserted_primary_key[0]


def update_owner(conn: Connection, consumer_id: int, *, project_id: int, user_id: int,
                 consumer_type_id: int | None) -> None:
    """Record a new project, user or type without touching the generation."""
    direct.execute(conn, _UPDATE_OWNER, {
        "consumer_id": consumer_id, "project_id": project_id, "user_id": user_id,
        "consumer_type_id": consumer_type_id, "now": utcnow()})


def bump_generation(conn: Connection, consumer_id: int, seen_generation: int) -> bool:
    """Advance the generation from ``seen_generation``; False if it had moved."""
    result = direct.execute(conn, _BUMP, {
        "consumer_id": consumer_id, "seen": seen_generation,
        "next": seen_generation + 1, "now": utcnow()})
    return result.rowcount == 1


# Built once, so that they may go straight to the driver (every write to an
# existing consumer's allocations bumps it).
_THIS = TABLE.c.id == sa.bindparam("consumer_id")
_UPDATE_OWNER = sa.update(TABLE).where(_THIS).values(
    project_id=sa.bindparam("project_id"), user_id=sa.bindparam("user_id"),
    consumer_type_id=sa.bindparam("consumer_type_id"),
    updated_at=sa.bindparam("now", type_=TABLE.c.updated_at.type))
_BUMP = sa.update(TABLE).where(_THIS, TABLE.c.generation == sa.bindparam("seen")).values(
    generation=sa.bindparam("next"), updated_at=sa.bindparam("now", type_=TABLE.c.updated_at.type))


def delete_if_no_allocations(conn: Connection, consumer_uuids: Iterable[str]) -> None:
    """Remove the consumers among ``consumer_uuids`` that hold no allocation."""
    uuids = sorted(set(consumer_uuids))
    if len(uuids) == 1:
        direct.execute(conn, _DELETE_ONE_IF_EMPTY, {"uuid": uuids[0]})
    elif 1 < len(uuids) <= direct.LISTED_UP_TO:
        direct.execute(conn, _delete_if_empty(len(uuids)), direct.listed("u", uuids))
    elif uuids:
        conn.execute(sa.delete(TABLE).where(TABLE.c.uuid.in_(uuids), ~sa.exists(_HOLDING)))


_HOLDING = sa.select(allocations.c.consumer_id).where(allocations.c.consumer_id == TABLE.c.uuid)
# One consumer's (every DELETE /allocations): built once, may go straight
# to the driver.
_DELETE_ONE_IF_EMPTY = sa.delete(TABLE).where(TABLE.c.uuid == sa.bindparam("uuid"),
                                              ~sa.exists(_HOLDING))


@functools.cache
def _delete_if_empty(count: int) -> sa.Delete:
    """Several consumers' (a move's), one statement per count."""
    return sa.delete(TABLE).where(direct.in_(TABLE.c.uuid, "u", count), ~sa.exists(_HOLDING))
