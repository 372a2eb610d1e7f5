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
