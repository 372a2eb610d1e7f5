"""A new consumer's first allocations: the consumer, its allocations and the
providers' generations written at the end of the claim, in one statement
on PostgreSQL.

nova's scheduler claims every new instance with ``PUT /allocations/{uuid}``
for a consumer that does not exist yet.  The claim reads the consumer and
locks its providers, checks the inventory, then writes three things that
depend on nothing it has not read already: the consumer's row, its
allocation rows and every provider one generation on.  On PostgreSQL they
go as one statement (two data-modifying ``WITH`` parts and the UPDATE):
a round trip and the driver's work for two statements fewer in a claim of
seven.  Elsewhere (SQLite and MySQL have no data-modifying ``WITH``) they
are the three statements they always were.

Either way the outcome is the same: the consumer's row is inserted last
instead of first, which nothing of the claim reads, and a racing insert of
the same UUID still raises the IntegrityError that makes the caller try
the whole write again.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import allocations as allocation_store
from allotment.storage import consumers as consumer_store
from allotment.storage import direct, feed
from allotment.storage.clock import utcnow
from allotment.storage.tables import allocations, consumers, resource_providers


@dataclass(frozen=True)
class NewConsumer:
    """A consumer to create with the claim: its UUID and the ids of its owner."""

    uuid: str
    project_id: int
    user_id: int
    consumer_type_id: int | None
    generation: int


# Up to so many allocation rows and providers the tail binds one parameter
# per value, in a statement kept per shape (a claim on one host is three
# rows and one provider).  PostgreSQL settles on one plan for such a
# prepared statement after a few runs; with array parameters it plans the
# statement again at every run (its generic plan cannot know the arrays'
# lengths and always looks dearer than one made for them: about 130 us of
# the server's CPU a claim against a grown database).  Longer claims take
# the arrays.
ROWS_LISTED_UP_TO = 2 * direct.LISTED_UP_TO
PROVIDERS_LISTED_UP_TO = direct.LISTED_UP_TO


def _tail(given: sa.FromClause, seen: sa.FromClause) -> sa.Update:
    """PostgreSQL's claim tail over ``given`` (columns pid, cid, used: the
    allocations) and ``seen`` (columns id, seen: the providers with the
    generations they were read at); parameters ``consumer_uuid``,
    ``owner_project``, ``owner_user``, ``owner_type``,
    ``consumer_generation`` and ``now``.  Its row count is the number of
    providers moved."""
    now = sa.bindparam("now", type_=consumers.c.created_at.type)
    uuid = sa.bindparam("consumer_uuid", type_=consumers.c.uuid.type)
    consumer = sa.insert(consumers).values(
        uuid=uuid, project_id=sa.bindparam("owner_project", type_=consumers.c.project_id.type),
        user_id=sa.bindparam("owner_user", type_=consumers.c.user_id.type),
        consumer_type_id=sa.bindparam("owner_type", type_=consumers.c.consumer_type_id.type),
        generation=sa.bindparam("consumer_generation", type_=consumers.c.generation.type),
        created_at=now,
    ).returning(consumers.c.id).cte("new_consumer")
    held = sa.insert(allocations).from_select(
        ["consumer_id", "resource_provider_id", "resource_class_id", "used", "created_at"],
        sa.select(uuid, given.c.pid, given.c.cid, given.c.used, now),
    ).returning(allocations.c.id).cte("new_allocations")
    rp = resource_providers
    return (sa.update(rp)
            .where(rp.c.id == seen.c.id, rp.c.generation == seen.c.seen)
            .values(generation=rp.c.generation + 1, updated_at=now)
            .add_cte(consumer).add_cte(held))


def _with_arrays() -> sa.Update:
    """The tail for any number of rows: the allocations as arrays (``pids``,
    ``cids``, ``used``, in the order of the ids) and the providers too
    (``ids``, ``seen``)."""
    given = sa.func.unnest(
        sa.bindparam("pids", type_=sa.ARRAY(sa.Integer)),
        sa.bindparam("cids", type_=sa.ARRAY(sa.Integer)),
        sa.bindparam("used", type_=sa.ARRAY(sa.Integer)),
    ).table_valued("pid", "cid", "used").render_derived()
    seen = sa.func.unnest(
        sa.bindparam("ids", type_=sa.ARRAY(sa.Integer)),
        sa.bindparam("seen", type_=sa.ARRAY(sa.Integer)),
    ).table_valued("id", "seen").render_derived()
    return _tail(given, seen)


def _values(name: str, columns: tuple[str, ...], count: int) -> sa.Values:
    """``(VALUES (:<column>_0, ...), ...) AS name(columns)``: ``count`` rows of
    integer parameters."""
    return sa.values(*(sa.column(c, sa.Integer) for c in columns), name=name).data(
        [tuple(sa.bindparam(f"{c}_{k}", type_=sa.Integer) for c in columns)
         for k in range(count)])


def _bound(columns: tuple[str, ...], rows: list[tuple]) -> dict[str, int]:
    """The parameters of :func:`_values` for ``rows`` (one value a column)."""
    return {f"{c}_{k}": value for k, row in enumerate(rows)
            for c, value in zip(columns, row, strict=True)}


_GIVEN = ("pid", "cid", "used")
_SEEN = ("id", "seen")


@functools.cache
def _listed(rows: int, providers: int) -> sa.Update:
    """The tail for so many allocation rows and providers, built once:
    parameters ``pid_<k>``, ``cid_<k>``, ``used_<k>`` and ``id_<k>``,
    ``seen_<k>``."""
    return _tail(_values("given", _GIVEN, rows), _values("seen", _SEEN, providers))


_WITH_ARRAYS = _with_arrays()


def write(conn: Connection, consumer: NewConsumer, amounts: Mapping[tuple[int, int], int],
          seen: Mapping[int, int]) -> bool:
    """Create ``consumer`` holding ``amounts`` ({(provider id, class id):
    used}) and move the providers in ``seen`` (provider id ->
    generation read) one generation on; False, with nothing that counts
    written, when any provider's generation had moved already (the caller
    rolls back).  The change feed learns of the generations here, of the
    usage from the caller (allocations.note_usage)."""
    if conn.dialect.name != "postgresql":
        consumer_store.create(conn, uuid=consumer.uuid, project_id=consumer.project_id,
                              user_id=consumer.user_id,
                              consumer_type_id=consumer.consumer_type_id,
                              generation=consumer.generation)
        allocation_store.insert(conn, consumer.uuid, amounts)
        return allocation_store.advance_providers(conn, seen)
    now = utcnow()
    rows = sorted(amounts.items())
    providers = sorted(seen.items())
    params = {
        "consumer_uuid": consumer.uuid, "owner_project": consumer.project_id,
        "owner_user": consumer.user_id, "owner_type": consumer.consumer_type_id,
        "consumer_generation": consumer.generation, "now": now}
    if len(rows) <= ROWS_LISTED_UP_TO and len(providers) <= PROVIDERS_LISTED_UP_TO:
        statement = _listed(len(rows), len(providers))
        params.update(_bound(_GIVEN, [(pid, cid, used) for (pid, cid), used in rows]))
        params.update(_bound(_SEEN, providers))
    else:
        statement = _WITH_ARRAYS
        params.update(
            pids=[pid for (pid, _), _ in rows], cids=[cid for (_, cid), _ in rows],
            used=[used for _, used in rows],
            ids=[pid for pid, _ in providers], seen=[gen for _, gen in providers])
    moved = direct.execute(conn, statement, params)
    if moved.rowcount != len(seen):
        return False
    for pid, generation in providers:
        feed.note_generation(conn, pid, generation + 1, now)
    return True
