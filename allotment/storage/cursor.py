"""One process's place in the change feed, and what it reads to move on.

A process's world is the database as of some point in the feed.  The
cursor remembers that point -- the *head* (every id up to it was read or is
a *gap*) and the gaps themselves -- and has one question for the feed,
:meth:`FeedCursor.advance`, whose answer is either :data:`RELOAD` (read the
whole world again, :meth:`FeedCursor.load_everything`) or a
:class:`Changes`: the rows not read yet, and whatever they name (trees,
names, the usage of providers new to the world) read in the snapshot the
rows were read in, so that the world, once they are applied, is the
database as of that snapshot.

On SQLite and MySQL/MariaDB (a Galera cluster included) feed rows commit
in id order (see storage/feed.py): an id skipped is never coming.  On
PostgreSQL ids are taken in insert order but transactions commit in any
order: row 12 can be visible while row 11 is still to come.  So there the
cursor remembers every id it skipped (a gap) and asks for those again
with every read until they appear.  An id can also never appear (its
transaction rolled back after taking it); once the server says no
transaction that began before the gap was noticed is still open, a gap that
has not appeared never will, and is forgotten.  That question is exact on
one server; it is never asked of a node of a cluster, which cannot see the
transactions open on the others.

The answer is RELOAD when the feed was pruned past an id the cursor
skipped (what that row said is lost), when a row asks every process to
reload, when gaps pile up past :data:`MAX_GAPS`, when a row read a moment
ago has been pruned by the time the trees it names are read -- and when the
database went back in time (see ``feed.Position``): every read of the feed
brings back the row the cursor stands on, and an answer that lacks it, has
it with another stamp, or (PostgreSQL) comes from another epoch, means the
database no longer holds what the world applied.  That check is made in the
very statement, or snapshot, whose rows would be applied, so no row of a
database that went back is ever applied on top of a world it no longer
matches.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from allotment import telemetry
from allotment.storage import catch_up, feed
from allotment.storage import loader as store
from allotment.storage.db import Database
from allotment.storage.loader import LoadedNames, LoadedProvider

# A gap younger than this (seconds) is simply asked for again: the
# transaction holding it is usually about to commit.
GAP_PATIENCE = 1.0
# Backends on which a skipped id may still commit later (see above).
OUT_OF_ORDER = frozenset({"postgresql"})
# More gaps than this means something odd is going on: reload everything.
MAX_GAPS = 10_000

Usage = list[tuple[int, int, int]]  # (provider id, class id, amount)


@dataclass(frozen=True)
class Gap:
    noticed: datetime.datetime  # database clock
    since: float  # time.monotonic() when first noticed


class Reload:
    """The answer that says: read the whole world again."""

    def __repr__(self) -> str:
        return "RELOAD"


RELOAD = Reload()


@dataclass(frozen=True)
class Changes:
    """Feed rows to apply (any order), with what they name read in their snapshot.

    ``trees`` are the trees whose roots were ``roots`` as they are now (a
    root may have lost or gained providers, or be gone); ``names`` is set
    only when a row changed them; ``fresh`` are the providers of ``trees``
    that the world did not know by their ids, with their whole ``usage``
    (their rows' usage deltas are already in it, and a note about an id
    reused by a new provider does not concern it).
    """

    entries: list[feed.Entry]
    roots: frozenset[int] = frozenset()
    trees: dict[int, LoadedProvider] = field(default_factory=dict)
    names: LoadedNames | None = None
    fresh: frozenset[int] = frozenset()
    usage: Usage = field(default_factory=list)


NOTHING = Changes([])


@dataclass(frozen=True)
class Everything:
    """The whole world as :meth:`FeedCursor.load_everything` reads it."""

    providers: dict[int, LoadedProvider]
    usage: Usage
    names: LoadedNames


def _reshapes(entries: list[feed.Entry]) -> bool:
    """Whether ``entries`` change more than usage and generations."""
    return any(e.roots or e.names or e.reset for e in entries)


class FeedCursor:
    """Where one process's world stands in the feed of one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # Every id up to the position's was read or is a gap; the position
        # also says how to tell that the database still holds that row.
        self.position = feed.ORIGIN
        self.gaps: dict[int, Gap] = {}
        self._checked = 0.0  # time.monotonic() of the last look at old gaps

    @property
    def head(self) -> int:
        """Every id up to here was read or is a gap."""
        return self.position.id

    def load_everything(self) -> Everything:
        """The whole world, and the feed's place as of it, in one snapshot."""
        with self.db.autocommit() as conn:
            # Before the snapshot, so that it sees the epoch (if a crash
            # empties it again in between, the next look reloads).
            feed.ensure_epoch(conn)
        with self.db.read() as conn:
            pruned = feed.pruned_below(conn)
            ids, stamp = feed.last_after(conn, max(pruned - 1, 0))
            if not ids and pruned > 1:
                stamp = feed.stamp_of(conn, pruned - 1)
            epoch = feed.epoch(conn)
            everything = Everything(store.load(conn), store.usage(conn), store.names(conn))
            noticed = feed.now(conn) if self.db.backend in OUT_OF_ORDER else None
        self.position = feed.Position(ids[-1] if ids else max(pruned - 1, 0), stamp, epoch)
        self.gaps = {}
        if noticed is not None and ids:
            since = time.monotonic()
            present = set(ids)
            self.gaps = {i: Gap(noticed, since)
                         for i in range(max(pruned, 1), self.head) if i not in present}
        return everything

    def advance(self, known: Callable[[int], str | None]) -> Changes | Reload:
        """What was committed since the last answer (or the last load).

        ``known(provider id)`` is the UUID the world knows that id by (None
        if none): a provider the trees read are new to is read with its usage.
        The cursor moves past what it answers: apply it, or load everything.
        """
        quick = self._from_probe()
        if quick is not None:
            return quick
        with self.db.autocommit() as conn:
            found = feed.read(conn, self.position, self.gaps)
            if found.back:
                return self._went_back()
            entries = found.entries
            if entries:
                if not _reshapes(entries):
                    # Usage moves only: deltas add up in any order.
                    return Changes(entries) if self._account(conn, entries) else RELOAD
                also = set(self.gaps)
            else:
                # Nothing new; some gaps may be given up, and rows may have
                # filled them just before.
                entries = self._settle_gaps(conn) if self.gaps else []
                if not _reshapes(entries):
                    return Changes(entries) if entries else NOTHING
                also = set(self.gaps) | {e.id for e in entries}
        # Trees must be read in the snapshot the rows are read in: read them
        # again there (a few more may have come), with the trees they name.
        named = {r for e in entries for r in e.roots}
        with self.db.read() as conn:
            found, trees = catch_up.read(conn, self.position, also, named)
            if found.back:
                return self._went_back()
            entries = found.entries
            if not entries or not self._account(conn, entries) or any(
                    e.reset for e in entries):
                return RELOAD
            return self._with_what_they_name(conn, entries, named, trees, known)

    def _from_probe(self) -> Changes | None:
        """The rows after the world's own, from the feed's last rows that the
        probe brought a moment ago in this request (PostgreSQL and MySQL,
        ``FeedProbe.recent``): only when they reach back to the world's own
        row, still there with its stamp and epoch, when no id after it is
        missing and none of them reshapes a tree (trees are read in the
        snapshot of their rows).  Anything else (None) reads the feed the
        usual way, which answers every other case, a database gone back
        included."""
        rows = self.db.probe.recent(self.position)
        if (rows is None or self.gaps or not self.position.id
                or not rows or rows[0][0] != self.position.id):
            return None
        found = feed.tail(rows, self.position, epochs=self.db.backend == "postgresql")
        entries = found.entries
        first = self.position.id + 1
        if (found.back or not entries or _reshapes(entries)
                or [e.id for e in entries] != list(range(first, first + len(entries)))):
            return None
        self._account(None, entries)  # no id skipped: nothing to ask the database
        return Changes(entries)

    def _went_back(self) -> Reload:
        # The database no longer holds what the world applied (feed.Position):
        # nothing read since can be applied on top of it.
        telemetry.metrics().feed_went_back.inc()
        return RELOAD

    def _with_what_they_name(self, conn, entries: list[feed.Entry], named: set[int],
                             trees: dict[int, LoadedProvider],
                             known: Callable[[int], str | None]) -> Changes:
        roots = {r for e in entries for r in e.roots}
        if roots - named:
            # Named by rows that came since the first look (trees are
            # disjoint: the two reads do not overlap).
            trees = {**trees, **store.load(conn, roots - named)}
        roots |= named
        names = store.names(conn) if any(e.names for e in entries) else None
        fresh = frozenset(pid for pid, p in trees.items() if known(pid) != p.uuid)
        usage = store.usage(conn, fresh) if fresh else []
        return Changes(entries, frozenset(roots), trees, names, fresh, usage)

    def _account(self, conn, entries: list[feed.Entry]) -> bool:
        """Move ``head`` past ``entries``, noting the ids they skip.

        False when a skipped id may have been pruned: then what it said is
        lost to us.
        """
        for e in entries:
            self.gaps.pop(e.id, None)
        top = entries[-1]
        if top.id <= self.head:
            return True
        present = {e.id for e in entries}
        skipped = [i for i in range(self.head + 1, top.id) if i not in present]
        self.position = feed.Position(top.id, top.stamp, self.position.epoch)
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
