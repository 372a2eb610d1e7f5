"""Keep a process's world current by reading the change feed.

Each request first calls :func:`current`, which reads the feed rows this
process has not applied yet -- one indexed range read when nothing changed
-- applies them, and hands out the world under a lock, so a request sees
every change committed before it began and never a world half-way through
a change.  Only at start (or when the feed was pruned past what this
process had read, or a write asked every process to reload) is the whole
world read.

On SQLite and MySQL/MariaDB (a Galera cluster included) feed rows commit
in id order (see storage/feed.py): an id skipped is never coming.  On
PostgreSQL ids are taken in insert order but transactions commit in any
order: row 12 can be visible while row 11 is still to come.  So there the
reader remembers every id it skipped (a *gap*) and asks for those again
with every read until they appear.  An id can also never appear (its
transaction rolled back after taking it); once the server says no
transaction that began before the gap was noticed is still open, a gap that
has not appeared never will, and is forgotten.  That question is exact on
one server; it is never asked of a node of a cluster, which cannot see the
transactions open on the others.
"""

from __future__ import annotations

import datetime
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from allotment import telemetry
from allotment.storage import catch_up, feed
from allotment.storage import loader as store
from allotment.storage.db import Database
from allotment.world.model import Names, World

# A gap younger than this (seconds) is simply asked for again: the
# transaction holding it is usually about to commit.
GAP_PATIENCE = 1.0
# Backends on which a skipped id may still commit later (see above).
OUT_OF_ORDER = frozenset({"postgresql"})
# More gaps than this means something odd is going on: reload everything.
MAX_GAPS = 10_000


@dataclass(frozen=True)
class Gap:
    noticed: datetime.datetime  # database clock
    since: float  # time.monotonic() when first noticed


class Replica:
    """One process's copy of the provider world, for one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.lock = threading.RLock()
        self.world: World | None = None
        self.head = 0  # every id up to here was applied or is a gap
        self.gaps: dict[int, Gap] = {}
        self._checked = 0.0
        self._mark: int | None = None  # storage.watch's mark when last current
        self.rebuilds = 0

    @contextmanager
    def current(self) -> Iterator[World]:
        """The world with every change committed before now, held until exit."""
        with self.lock:
            self.catch_up()
            yield self.world

    # -- catching up ---------------------------------------------------------

    def catch_up(self) -> None:
        with self.lock:
            # Taken before looking, so that a commit made while we look
            # changes the next mark and is looked for then.
            mark = self.db.watch.mark()
            if self.world is None:
                self.rebuild()
            elif mark is None or mark != self._mark or self.gaps:
                try:
                    self._catch_up()
                except BaseException:
                    # A failure part way (the database went away between
                    # reading the feed and reading the trees it names) may
                    # have moved ``head`` past changes not applied: never
                    # serve that world; the next request reads it all again.
                    self.world = None
                    raise
            # Nothing committed since this mark was taken is missing now.
            self._mark = mark

    def _catch_up(self) -> None:
        with self.lock:
            if not self.gaps and self.db.probe.newer_than(self.head) is False:
                return
            with self.db.autocommit() as conn:
                entries = feed.read(conn, self.head, self.gaps)
                if not entries:
                    if self.gaps:
                        late = self._settle_gaps(conn)
                        if late:
                            self._catch_up_with(late)
                    return
                # Usage moves only: deltas add up in any order.
                if (not any(e.roots or e.names or e.reset for e in entries)
                        and not self._account(conn, entries)):
                    entries = None  # the feed was pruned past us
            if entries is None:
                self.rebuild()
            elif any(e.roots or e.names or e.reset for e in entries):
                # Trees must be read in the snapshot the entries were read
                # in: read again there (a few more may have come), together
                # with the trees these entries name.
                roots = {r for e in entries for r in e.roots}
                with self.db.read() as conn:
                    entries, loaded = catch_up.read(conn, self.head, self.gaps, roots)
                    if entries and self._account(conn, entries):
                        self.apply(entries, conn, (roots, loaded))
                        return
                self.rebuild()
            else:
                self.apply(entries, None)

    def _catch_up_with(self, late: list[feed.Entry]) -> None:
        """Apply rows that filled gaps, reading any trees they name now."""
        if any(e.roots or e.names or e.reset for e in late):
            # Read them again, and everything since, in one snapshot.
            with self.db.read() as conn:
                entries = feed.read(conn, self.head,
                                    set(self.gaps) | {e.id for e in late})
                if self._account(conn, entries):
                    self.apply(entries, conn)
                    return
            self.rebuild()
        else:
            self.apply(late, None)

    def _account(self, conn, entries: list[feed.Entry]) -> bool:
        """Move ``head`` past ``entries``, noting the ids they skip.

        False when a skipped id may have been pruned: then what it said is
        lost to us.
        """
        for e in entries:
            self.gaps.pop(e.id, None)
        top = entries[-1].id
        if top <= self.head:
            return True
        present = {e.id for e in entries}
        skipped = [i for i in range(self.head + 1, top) if i not in present]
        self.head = top
        if not skipped:
            return True
        if skipped[0] < feed.pruned_below(conn):
            return False
        if self.db.backend not in OUT_OF_ORDER:
            # Rows commit in id order: a skipped id was rolled back (SQLite)
            # or never taken, never to appear.
            return True
        telemetry.metrics().feed_gaps.inc(len(skipped))
        noticed = feed.now(conn)
        since = time.monotonic()
        for i in skipped:
            self.gaps[i] = Gap(noticed, since)
        return len(self.gaps) <= MAX_GAPS

    def _settle_gaps(self, conn) -> list[feed.Entry]:
        """Forget gaps that can no longer fill; returns any that just did."""
        now = time.monotonic()
        if now - self._checked < GAP_PATIENCE:
            return []
        due = {i: g for i, g in self.gaps.items() if now - g.since >= GAP_PATIENCE}
        if not due:
            return []
        self._checked = now
        settled: set[int] = set()
        for noticed in sorted({g.noticed for g in due.values()}):
            if feed.in_flight_before(conn, noticed):
                break  # later ones were noticed later still
            settled.update(i for i, g in due.items() if g.noticed == noticed)
        if not settled:
            return []
        # Read them once more: one may have committed just before the check.
        late = feed.read_ids(conn, settled)
        for i in settled:
            self.gaps.pop(i, None)
        return late

    # -- applying ------------------------------------------------------------

    def rebuild(self) -> None:
        """Read the whole world, and where the feed stands, in one snapshot."""
        with self.lock:
            with self.db.read() as conn:
                pruned = feed.pruned_below(conn)
                ids = feed.ids_after(conn, max(pruned - 1, 0))
                loaded = store.load(conn)
                usage = store.usage(conn)
                names = Names(store.class_names(conn), store.trait_ids(conn))
                noticed = feed.now(conn) if self.db.backend in OUT_OF_ORDER else None
            self.world = World(loaded, usage, names)
            self.head = ids[-1] if ids else max(pruned - 1, 0)
            self.gaps = {}
            if noticed is not None and ids:
                since = time.monotonic()
                present = set(ids)
                self.gaps = {i: Gap(noticed, since)
                             for i in range(max(pruned, 1), self.head) if i not in present}
            self.rebuilds += 1
            telemetry.metrics().reloads.inc()

    def apply(self, entries: list[feed.Entry], conn,
              read: tuple[set[int], dict[int, dict]] | None = None) -> None:
        """Bring the world up to date with ``entries`` (any order).

        Trees and names the entries name are read through ``conn``, which
        must be in the snapshot the entries were read in: the world then
        equals the database as of that snapshot (rows still to come and
        their changes included alike).  ``read`` is ``(roots, trees)``
        already read in that snapshot; those trees are taken as they are,
        whether the entries name them or not.
        """
        world = self.world
        if any(e.reset for e in entries):
            self.rebuild()
            return
        roots: set[int] = set()
        names_changed = False
        for e in entries:
            roots.update(e.roots)
            names_changed = names_changed or e.names
        read_roots, loaded = read if read is not None else (set(), {})
        # Providers new to the world are read whole, usage and generation
        # included.  Notes about their ids are skipped: an id freed by a
        # deleted provider may be given to a new one (SQLite reuses the
        # highest), and notes about the old provider must not reach the new.
        fresh: set[int] = set()
        if roots or names_changed:
            names = (Names(store.class_names(conn), store.trait_ids(conn))
                     if names_changed else world.names)
            if roots - read_roots:
                # Trees are disjoint: the two reads do not overlap.
                loaded = {**loaded, **store.load(conn, roots - read_roots)}
            roots |= read_roots
            if names.renames_classes_of(world.names):
                # Inventories and usage are kept by class name.
                self.rebuild()
                return
            world.set_names(names)
            if roots:
                fresh = {pid for pid, p in loaded.items()
                         if world.uuid_of_id.get(pid) != p["uuid"]}
                world.replace_trees(roots, loaded)
                if fresh:
                    world.set_usage(fresh, store.usage(conn, fresh))
        else:
            loaded = {}
        for e in entries:
            if e.usage:
                world.add_usage(d for d in e.usage if d[0] not in fresh)
            if e.generations:
                # A reloaded provider's generation is already the one of this
                # snapshot.  Its id may even have belonged to another provider
                # when the note was written (SQLite reuses the highest id
                # after a delete), so the note must not touch it.
                world.touch(g for g in e.generations if g[0] not in loaded)


_REPLICAS: weakref.WeakKeyDictionary[Database, Replica] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


def replica(db: Database) -> Replica:
    """This process's replica of ``db``'s world (made on first use)."""
    with _REGISTRY_LOCK:
        found = _REPLICAS.get(db)
        if found is None:
            found = _REPLICAS[db] = Replica(db)
        return found


def forget(db: Database) -> None:
    """Drop this process's replica of ``db``, whose owner is done with it.

    A replica holds its database, so the registry's weak key alone never
    lets either go: a process that opens many short-lived databases (a test
    fixture opens one per test) would otherwise keep every world it loaded.
    """
    with _REGISTRY_LOCK:
        _REPLICAS.pop(db, None)


@contextmanager
def current(db: Database) -> Iterator[World]:
    """The world of ``db`` as of now; see :meth:`Replica.current`."""
    with replica(db).current() as world:
        yield world
