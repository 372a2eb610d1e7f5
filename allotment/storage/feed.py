"""The change feed: what every write changed, appended in its own transaction.

API processes keep the provider world (trees, inventories, traits,
aggregates and usage) in memory.  So that each of them can bring its copy
up to date by reading only what changed, every write transaction appends
one row to ``placement_changes`` naming what it touched:

* ``t``: ids of the roots of provider trees whose shape, names,
  generations, inventories, traits or aggregates changed (the old and the
  new root when a subtree moves);
* ``n``: the names of resource classes or traits changed;
* ``u``: usage deltas ``[provider id, class id, delta]`` of allocation writes;
* ``g``: ``[provider id, generation, when]`` of providers whose generation
  a write moved (``when`` is the provider's new ``updated_at``);
* ``r``: everything may have changed (a reader reloads the whole world).

Storage functions *note* changes as they make them (:func:`note_roots`,
:func:`note_usage` ...); :class:`~allotment.storage.db.Database` collects
the notes of one transaction and :func:`flush` writes them as one row just
before it commits, so the row commits or rolls back with the change.  There
is no counter row that every writer would have to update.

How ids are taken decides what a reader may conclude from a skipped one:

* SQLite: writers are serial, ids commit in order.
* PostgreSQL: ids come from the table's sequence, which hands them out in
  the order rows are *inserted*, not the order transactions *commit*: a
  reader can see row 12 before row 11 commits.  Readers keep track of the
  ids they skipped (see ``allotment.storage.cursor``) and ask
  :func:`in_flight_before` whether a skipped id can still appear; the
  server knows every open transaction, so the answer is exact.
* MySQL and MariaDB, Galera clusters included: a row's id is the last
  row's id plus one, read under a lock on that last row (:func:`_append_next`).
  A writer on the same server waits for the one before it to commit or roll
  back; writers on two nodes of a Galera cluster that take the same id both
  put that primary key in their write sets, so certification lets one commit
  and aborts the other (which is run again).  Ids are therefore dense and
  commit in order on every node: a row visible means every row below it is
  visible too (Galera commits write sets in one order everywhere), and a
  reader never waits for a skipped id.  No open transaction on another node
  has to be guessed at, which a node of a cluster cannot see.  It also puts
  every write in every other concurrent write's way: on a Galera cluster,
  two writes through two nodes at once never both commit, however unrelated
  their rows (see docs/reliability.md for the layout that avoids the retries).
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment import errors
from allotment.storage import direct
from allotment.storage.clock import utcnow
from allotment.storage.tables import (
    allotment_epoch,
    placement_changes,
    placement_feed_state,
    resource_providers,
)

TABLE = placement_changes
_STATE = placement_feed_state.c.id == 1
_NOTES = "allotment.feed_notes"
# Writers prune old rows every so many ids (see flush).
PRUNE_EVERY = 512


@dataclass
class Notes:
    """The changes of one write transaction, not yet written."""

    roots: set[int] = field(default_factory=set)
    providers: set[int] = field(default_factory=set)
    names: bool = False
    reset: bool = False
    usage: dict[tuple[int, int], int] = field(default_factory=dict)
    generations: dict[int, tuple[int, datetime.datetime]] = field(default_factory=dict)
    # Roots of providers, read under their row locks in this transaction:
    # providers noted later need no lookup of their tree when flushing.
    root_of: dict[int, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.roots or self.providers or self.names or self.reset
                    or any(self.usage.values()) or self.generations)


@dataclass(frozen=True)
class Entry:
    """One row of the feed, as a reader sees it."""

    id: int
    # Random, drawn when the row was written: a row that takes the id of a
    # row the database lost (see Position) is told apart by it.
    stamp: int | None = None
    roots: tuple[int, ...] = ()
    names: bool = False
    reset: bool = False
    usage: tuple[tuple[int, int, int], ...] = ()
    # (provider id, generation, updated_at)
    generations: tuple[tuple[int, int, datetime.datetime], ...] = ()


# -- writing -------------------------------------------------------------------

def begin(conn: Connection) -> Notes:
    """Start collecting the notes of the transaction open on ``conn``."""
    notes = conn.info[_NOTES] = Notes()
    return notes


def end(conn: Connection) -> Notes | None:
    """Stop collecting; returns what was collected (None if nothing was)."""
    return conn.info.pop(_NOTES, None)


def _notes(conn: Connection) -> Notes:
    notes = conn.info.get(_NOTES)
    if notes is None:
        # A write made outside Database.write() (set-up code): it gets its
        # notes written when ``flush`` is called by whoever opened it.
        notes = begin(conn)
    return notes


def note_roots(conn: Connection, root_ids: Iterable[int | None]) -> None:
    """The trees with these roots changed (ids as they were before the change)."""
    _notes(conn).roots.update(r for r in root_ids if r is not None)


def note_root_of(conn: Connection, provider_id: int, root_id: int) -> None:
    """The provider's tree changed; its root, read under the provider's row
    lock, is ``root_id`` (a move of the tree would wait for our commit)."""
    notes = _notes(conn)
    notes.root_of[provider_id] = root_id
    notes.roots.add(root_id)


def note_providers(conn: Connection, provider_ids: Iterable[int]) -> None:
    """These providers changed; their trees are looked up when the notes are written."""
    _notes(conn).providers.update(provider_ids)


def note_names(conn: Connection) -> None:
    _notes(conn).names = True


def note_reset(conn: Connection) -> None:
    _notes(conn).reset = True


def note_usage(conn: Connection, deltas: Mapping[tuple[int, int], int]) -> None:
    """Usage moved by ``{(provider id, class id): delta}``."""
    usage = _notes(conn).usage
    for key, delta in deltas.items():
        if delta:
            usage[key] = usage.get(key, 0) + delta


def note_generation(conn: Connection, provider_id: int, generation: int,
                    when: datetime.datetime) -> None:
    """A write moved a provider's generation (and its ``updated_at`` to ``when``)."""
    notes = _notes(conn)
    notes.generations[provider_id] = max(
        (generation, when), notes.generations.get(provider_id, (0, when)))


_APPEND = sa.insert(TABLE)
_APPEND_RETURNING_ID = _APPEND.returning(TABLE.c.id)
_ROOTS_OF = sa.select(resource_providers.c.root_provider_id).where(
    resource_providers.c.id.in_(sa.bindparam("ids", expanding=True))).distinct()


def flush(conn: Connection, notes: Notes | None, *,
          retention: datetime.timedelta | None = None) -> int | None:
    """Append ``notes`` as one row (if they say anything); returns its id.

    Called last in the transaction, so the row's id is taken as late as
    possible: the later it is taken, the shorter the time in which another
    transaction's row with a higher id can commit before it.  Every
    ``PRUNE_EVERY`` ids, rows older than ``retention`` are deleted too.
    """
    if not notes:
        return None
    roots = set(notes.roots)
    unknown = notes.providers - notes.root_of.keys()
    if unknown:
        roots.update(conn.execute(_ROOTS_OF, {"ids": sorted(unknown)}).scalars())
    data: dict = {}
    if roots:
        data["t"] = sorted(r for r in roots if r is not None)
    if notes.names:
        data["n"] = 1
    if notes.reset:
        data["r"] = 1
    usage = [[p, c, d] for (p, c), d in sorted(notes.usage.items()) if d]
    if usage:
        data["u"] = usage
    if notes.generations:
        data["g"] = sorted([p, g, when.isoformat()]
                           for p, (g, when) in notes.generations.items())
    now = utcnow()
    if not data:
        return None
    row = {"created_at": now, "data": json.dumps(data, separators=(",", ":")),
           "stamp": new_stamp()}
    if conn.dialect.name == "mysql":
        new_id = _append_next(conn, row)
    elif conn.dialect.insert_returning:
        new_id = direct.execute(conn, _APPEND_RETURNING_ID, row).scalar()
    else:
        new_id = conn.execute(_APPEND, row).inserted_primary_key[0]
    if retention is not None and new_id % PRUNE_EVERY == 0:
        prune(conn, now - retention, below=new_id)
    return new_id


def new_stamp() -> int:
    """A row's stamp: random, so that two rows that ever get one id (the
    database lost the first, see Position) differ by it.  Not a secret."""
    return random.getrandbits(63)


# The last row, locked: a writer that has appended a row and not committed
# holds it, so the next one waits here until that commit (or rollback).
_TAIL = sa.select(TABLE.c.id).order_by(TABLE.c.id.desc()).limit(1).with_for_update()
# A duplicate id is skipped, not raised: the transaction goes on and reads
# the tail again (no savepoint needed, so none a Galera abort could undo).
_APPEND_IF_FREE = sa.insert(TABLE).prefix_with("IGNORE")
# Each round means another writer committed the id read: a bound only
# against a server that ignores rows for another reason.
_APPEND_ROUNDS = 1000


def _append_next(conn: Connection, row: dict) -> int:
    """Append ``row`` with the id after the last one (MySQL, MariaDB).

    Several writers waiting for the same tail all read the same id when it
    commits (the scan does not start again after the wait): the first
    to insert it wins, the others find it taken and read the tail again.
    """
    for _ in range(_APPEND_ROUNDS):
        new_id = (direct.execute(conn, _TAIL).scalar() or 0) + 1
        if direct.execute(conn, _APPEND_IF_FREE, {**row, "id": new_id}).rowcount == 1:
            return new_id
    raise errors.TransactionAborted(
        "The change feed kept refusing new rows; nothing was written. Please retry.")


def prune(conn: Connection, older_than: datetime.datetime, *, below: int) -> int:
    """Delete rows created before ``older_than`` with ids under ``below``.

    The newest row always stays, so ids never restart on a database that
    forgets its sequence with the table empty.  Returns how many went.
    """
    last = conn.execute(
        sa.select(sa.func.max(TABLE.c.id))
        .where(TABLE.c.created_at < older_than, TABLE.c.id < below)).scalar()
    if last is None:
        return 0
    gone = conn.execute(sa.delete(TABLE).where(TABLE.c.id <= last)).rowcount
    conn.execute(sa.update(placement_feed_state).where(
        _STATE, placement_feed_state.c.pruned_below < last + 1)
        .values(pruned_below=last + 1))
    return gone


# -- reading -------------------------------------------------------------------

def _entry(row_id: int, stamp: int | None, text: str) -> Entry:
    data = json.loads(text)
    return Entry(
        id=row_id,
        stamp=stamp,
        roots=tuple(data.get("t", ())),
        names=bool(data.get("n")),
        reset=bool(data.get("r")),
        usage=tuple(tuple(u) for u in data.get("u", ())),
        generations=tuple((p, g, datetime.datetime.fromisoformat(when))
                          for p, g, when in data.get("g", ())),
    )


# -- where a reader stands, and whether the database still has it -----------


@dataclass(frozen=True)
class Position:
    """Where a world stands in the feed: the id of the last row applied,
    that row's stamp, and on PostgreSQL the epoch it was read in.

    The database is the truth even when it goes back in time: a server
    that crashed with commits not yet on disk (relaxed durability), a
    Galera cluster bootstrapped after a coordinated crash, a failover to
    an asynchronous replica.  Then rows a reader applied are gone, and
    their ids are handed out again (on MySQL an id is the last one plus
    one; a sequence may go back with its commits).  An id alone cannot
    tell; the row's random stamp can.  Where rows commit in id order
    (SQLite, MySQL, Galera), a database that still holds the last row a
    reader applied, with its stamp, lost nothing the reader applied:
    what it lost is a tail of its commits.  On PostgreSQL a row with a
    lower id can commit after the head (storage/cursor.py): the epoch
    covers that.  It is a row of an unlogged table, which crash recovery
    and a replica's promotion leave empty -- the only ways a PostgreSQL
    server loses a commit it acknowledged -- and which readers fill again
    with a new random token (:func:`ensure_epoch`).
    """

    id: int = 0
    stamp: int | None = None
    epoch: int | None = None


ORIGIN = Position()


@dataclass(frozen=True)
class Tail:
    """What :func:`read` found after a position: the rows to apply, and
    whether the database went back past that position (then the rows say
    nothing a reader can apply: read the whole world again)."""

    entries: list[Entry]
    back: bool = False


_COLUMNS = (TABLE.c.id, TABLE.c.stamp, TABLE.c.data)
# The epoch with every row (PostgreSQL): the statement then needs no
# round trip of its own, and can go to the server together with others.
_EPOCH = sa.select(allotment_epoch.c.token).where(
    allotment_epoch.c.id == 1).scalar_subquery().label("epoch")
# From the reader's own row on: it comes back too, and says whether the
# database still holds it.
_FROM = TABLE.c.id >= sa.bindparam("after")


def _select(pg: bool) -> sa.Select:
    return sa.select(*_COLUMNS, _EPOCH) if pg else sa.select(*_COLUMNS, sa.null())


_AFTER = {pg: _select(pg).where(_FROM).order_by(TABLE.c.id) for pg in (False, True)}
_AFTER_OR = _select(False).where(
    sa.or_(_FROM, TABLE.c.id.in_(sa.bindparam("ids", expanding=True)))).order_by(TABLE.c.id)
# On PostgreSQL the ids go as one array, so that the statement can go to the
# server together with others (see direct.together).
_AFTER_OR_PG = _select(True).where(
    sa.or_(_FROM, TABLE.c.id == sa.any_(sa.bindparam("ids", type_=sa.ARRAY(sa.BigInteger))))
).order_by(TABLE.c.id)
_BY_IDS = sa.select(*_COLUMNS).where(
    TABLE.c.id.in_(sa.bindparam("ids", expanding=True))).order_by(TABLE.c.id)
_LAST_AFTER = sa.select(TABLE.c.id, TABLE.c.stamp).where(
    TABLE.c.id > sa.bindparam("after")).order_by(TABLE.c.id)
_HEAD = sa.select(sa.func.max(TABLE.c.id))
_PRUNED = sa.select(placement_feed_state.c.pruned_below).where(_STATE)


def query(conn: Connection, position: Position,
          also: Iterable[int] = ()) -> tuple[sa.Select, dict]:
    """The statement :func:`read` runs, with its parameters; :func:`tail`
    reads its rows."""
    pg = conn.dialect.name == "postgresql"
    also = sorted(also)
    after = position.id
    if not also:
        return _AFTER[pg], {"after": after}
    if pg:
        return _AFTER_OR_PG, {"after": after, "ids": also}
    return _AFTER_OR, {"after": after, "ids": also}


def tail(rows: Iterable, position: Position, *, epochs: bool) -> Tail:
    """The rows of :func:`query` as entries after ``position``, and whether
    the database went back past it.  ``epochs``: the rows carry the epoch
    (PostgreSQL)."""
    found = []
    here = position.id == 0
    epoch = position.epoch
    for row_id, stamp, text, row_epoch in rows:
        if epochs and row_epoch != epoch:
            return Tail([], back=True)
        if row_id == position.id:
            if stamp != position.stamp:
                return Tail([], back=True)
            here = True
            continue
        found.append(_entry(row_id, stamp, text))
    return Tail(found, back=not here)


def read(conn: Connection, position: Position, also: Iterable[int] = ()) -> Tail:
    """Rows with ids above ``position`` plus those among ``also``, in id
    order, unless the database no longer holds ``position``."""
    statement, params = query(conn, position, also)
    return tail(direct.execute(conn, statement, params), position,
                epochs=conn.dialect.name == "postgresql")


def read_ids(conn: Connection, ids: Iterable[int]) -> list[Entry]:
    ids = sorted(ids)
    if not ids:
        return []
    return [_entry(*row) for row in conn.execute(_BY_IDS, {"ids": ids})]


def last_after(conn: Connection, after: int) -> tuple[list[int], int | None]:
    """The ids above ``after``, and the stamp of the last of them."""
    rows = conn.execute(_LAST_AFTER, {"after": after}).all()
    return [r[0] for r in rows], (rows[-1][1] if rows else None)


def stamp_of(conn: Connection, row_id: int) -> int | None:
    return conn.execute(sa.select(TABLE.c.stamp).where(TABLE.c.id == row_id)).scalar()


def epoch(conn: Connection) -> int | None:
    """The epoch (PostgreSQL; None elsewhere, or while nobody set it again)."""
    if conn.dialect.name != "postgresql":
        return None
    return conn.execute(sa.select(allotment_epoch.c.token)
                        .where(allotment_epoch.c.id == 1)).scalar()


def ensure_epoch(conn: Connection) -> None:
    """Give the database an epoch if it has none (PostgreSQL): after crash
    recovery or a promotion the unlogged table is empty, and the first
    reader to look fills it with a new token; the others keep the first."""
    if conn.dialect.name != "postgresql":
        return
    # Here rather than at the top: a server on SQLite or MySQL never
    # imports the PostgreSQL dialect.
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    conn.execute(pg_insert(allotment_epoch).values(id=1, token=new_stamp())
                 .on_conflict_do_nothing(index_elements=["id"]))


def head(conn: Connection) -> int:
    """The highest id present (0 for an empty feed)."""
    return int(conn.execute(_HEAD).scalar() or 0)


def pruned_below(conn: Connection) -> int:
    """Rows below this id may have been deleted by pruning."""
    return int(conn.execute(_PRUNED).scalar() or 0)


def now(conn: Connection) -> datetime.datetime:
    """The database server's clock (naive UTC on SQLite)."""
    backend = conn.dialect.name
    if backend == "postgresql":
        return conn.execute(sa.text("SELECT clock_timestamp()")).scalar()
    if backend == "mysql":
        return conn.execute(sa.text("SELECT NOW(6)")).scalar()
    return utcnow()


def in_flight_before(conn: Connection, when: datetime.datetime) -> bool:
    """Whether a transaction that began before ``when`` (server clock) is open.

    A skipped id belongs to a transaction that began before the skip was
    noticed; once no such transaction is open, the id will never appear.
    Only PostgreSQL skips ids that may still come (see the module's
    docstring), and it knows every open transaction; elsewhere nothing is
    ever in flight.
    """
    if conn.dialect.name != "postgresql":
        return False
    return conn.execute(sa.text(
        "SELECT EXISTS (SELECT 1 FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend' AND xact_start <= :when)"),
        {"when": when}).scalar()
