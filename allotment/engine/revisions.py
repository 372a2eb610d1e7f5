"""Revision numbers: what callers keep derived work under."""

from __future__ import annotations

import threading


class Revisions:
    """Revision numbers unique across every live snapshot of the process.

    Callers keep what they derive from a provider under its revision, in
    caches that outlive any one snapshot: a number must never mean two
    states, not even after a snapshot is rebuilt from scratch.
    """

    def __init__(self) -> None:
        self._next = 1
        self._lock = threading.Lock()

    def take(self, count: int = 1) -> int:
        """The first of ``count`` fresh numbers."""
        with self._lock:
            first = self._next
            self._next += count
            return first


class TouchLog:
    """The positions of a changing snapshot touched since a *mark*, so that
    what is kept per tree can be dropped for the trees that changed alone,
    without comparing every tree's revisions.

    Bounded: past ``2 * max(size(), FLOOR)`` entries the older half is
    forgotten, and a mark from before then answers None (everything may
    have changed)."""

    FLOOR = 10_000

    def __init__(self, size) -> None:
        self._size = size
        self._log: list[int] = []
        self._start = 0

    def add(self, i: int) -> None:
        log = self._log
        log.append(i)
        if len(log) > 2 * max(self._size(), self.FLOOR):
            half = len(log) // 2
            del log[:half]
            self._start += half

    def mark(self) -> int:
        return self._start + len(self._log)

    def since(self, mark: int) -> list[int] | None:
        """Positions touched since ``mark`` (repeats possible), or None
        when that is no longer known."""
        if mark < self._start:
            return None
        return self._log[mark - self._start:]
