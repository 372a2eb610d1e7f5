"""Keep a process's world current by reading the change feed.

Each request first calls :meth:`Replica.current`, which asks the process's
place in the feed (``storage.cursor``) what was committed since it last
asked -- one indexed range read when nothing changed -- applies it, and
hands out the world under a lock, so a request sees every change committed
before it began and never a world half-way through a change.  Only at
start, or when the cursor answers that the world must be read again (the
feed was pruned past what this process had read, a write asked every
process to reload), is the whole world read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from allotment import telemetry
from allotment.engine.codec import Codec
from allotment.storage.cursor import RELOAD, FeedCursor, Gap
from allotment.storage.db import Database
from allotment.storage.feed import Position
from allotment.world.model import Names, World

LOG = logging.getLogger(__name__)


class Replica:
    """One process's copy of the provider world, for one database.

    Owned by what serves requests (``allotment.runtime.Runtime``): it goes
    with its owner, and two applications over one database each keep their
    own.
    """

    def __init__(self, db: Database, codec: Codec | None = None) -> None:
        self.db = db
        # What the worlds read here keep answers encoded with (the API's,
        # given by the composition root); None: nothing is kept encoded.
        self._codec = codec
        self.lock = threading.RLock()
        self.world: World | None = None
        self.cursor = FeedCursor(db)
        self._mark: int | None = None  # storage.watch's mark when last current
        self.rebuilds = 0

    def carry_to(self, db: Database) -> None:
        """Serve this world, read by another process before it forked this
        one, from ``db`` (this process's own connections): the next
        :meth:`catch_up` reads the feed after where that process left off,
        not the whole world."""
        self.db = db
        self.cursor.db = db
        self.lock = threading.RLock()
        # The other process's look at the database says nothing of this one's.
        self._mark = None

    @property
    def codec(self) -> Codec | None:
        return self._codec

    @codec.setter
    def codec(self, codec: Codec | None) -> None:
        # A world read before (by the parent of a forked process) keeps
        # answers with it from now on too.
        self._codec = codec
        if self.world is not None:
            self.world.codec = codec

    @property
    def head(self) -> int:
        """Every feed id up to here was applied or is a gap."""
        return self.cursor.head

    @property
    def position(self) -> Position:
        """The feed row the world stands on (see ``feed.Position``)."""
        return self.cursor.position

    @property
    def gaps(self) -> dict[int, Gap]:
        return self.cursor.gaps

    @contextmanager
    def current(self) -> Iterator[World]:
        """The world with every change committed before now, held until exit."""
        with self.lock:
            self.catch_up()
            yield self.world

    def ask_ahead(self) -> None:
        """Send the question :meth:`catch_up` begins with now, and take its
        answer then (PostgreSQL; see ``storage.watch.FeedProbe.ask``): for a
        request that will read the world, as soon as it arrives."""
        self.db.probe.ask()

    def settle(self) -> None:
        """End a question asked ahead that its request did not take."""
        self.db.probe.settle()

    def _may_have_moved(self, mark: int | None) -> bool:
        """Whether anything may have been committed since the world was last
        brought up to date: the one place that decides whether to read the
        feed.  On SQLite the commit counter says (``mark``); elsewhere the
        probe asks whether the feed's last row is still the one the world
        stands on (which a database gone back in time fails too); skipped
        ids are asked for in any case."""
        if self.cursor.gaps:
            return True
        if mark is not None:
            return mark != self._mark
        return self.db.probe.newer_than(self.cursor.position) is not False

    def catch_up(self) -> None:
        with self.lock:
            # Taken before looking, so that a commit made while we look
            # changes the next mark and is looked for then.
            mark = self.db.watch.mark()
            if self.world is None:
                self.rebuild()
            elif self._may_have_moved(mark):
                try:
                    self._advance()
                except BaseException:
                    # A failure part way (the database went away between
                    # reading the feed and reading the trees it names) may
                    # have moved the cursor past changes not applied: never
                    # serve that world; the next request reads it all again.
                    self.world = None
                    raise
            # Nothing committed since this mark was taken is missing now.
            self._mark = mark

    def _advance(self) -> None:
        changes = self.cursor.advance(self.world.uuid_of_id.get)
        if changes is RELOAD or not self.world.apply(changes):
            self.rebuild()

    def compact(self) -> None:
        """Make the world's objects again next to each other (see
        world.compaction): in a process that forks others, once read."""
        with self.lock:
            if self.world is None:
                return
            try:
                self.world.compact()
            except Exception:
                # Half made again: never served; the next look (before a
                # fork, or a request) reads it all.
                LOG.warning("The world could not be made again; it is read anew",
                            exc_info=True)
                self.world = None

    def rebuild(self) -> None:
        """Read the whole world, and where the feed stands, in one snapshot."""
        with self.lock:
            everything = self.cursor.load_everything()
            self.world = World(everything.providers, everything.usage,
                               Names(*everything.names), self._codec)
            self.rebuilds += 1
            telemetry.metrics().reloads.inc()
