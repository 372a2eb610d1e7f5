"""What requests make of the world and keep for the next request.

Most of a large answer is the same as last time: the summaries, listings
and encoded bodies of providers that did not change since.  Services and
renderers keep what they make of a provider here, in a *section* per kind
of thing made, keyed by what it describes (a provider's UUID, with whatever
else it depends on, such as the microversion's shape) and stamped with the
revision of what it was made from (``LiveSnapshot.revision``): an entry
whose stamp is not the current revision is made again and replaces it, so
a provider has one entry per kind however often it changes.

One cache per world, with one budget: it goes with its world when the
world is read again from scratch, and when the entries of all sections
together pass the budget, the largest sections are emptied (deleted
providers leave entries behind; microversions and query shapes multiply
them) until they fit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

# Entries kept beyond BUDGET_PER_PROVIDER per provider of the world.
BUDGET_BASE = 200_000
# A provider is described by several kinds (summary, view, detail, their
# encodings at a few shapes); room for that many of each.
BUDGET_PER_PROVIDER = 8


class Cache:
    """The sections of one world's cache."""

    def __init__(self, providers: Callable[[], int]) -> None:
        self._providers = providers
        self._sections: dict[Hashable, dict] = {}
        # Sections are asked for while the world is held (services) and
        # after (renderers): the list of sections changes under this lock.
        self._lock = threading.Lock()

    @property
    def budget(self) -> int:
        return BUDGET_BASE + BUDGET_PER_PROVIDER * self._providers()

    def section(self, kind: Hashable) -> dict:
        """The entries of ``kind``: a plain dict, read and written directly
        (a lookup in a large answer's loop must cost no more than that)."""
        with self._lock:
            found = self._sections.get(kind)
            if found is None:
                found = self._sections[kind] = {}
            self._fit()
            return found

    def __len__(self) -> int:
        return sum(map(len, list(self._sections.values())))

    def _fit(self) -> None:
        total = sum(map(len, self._sections.values()))
        budget = self.budget
        if total <= budget:
            return
        for kind, entries in sorted(self._sections.items(), key=lambda item: len(item[1]),
                                    reverse=True):
            total -= len(entries)
            # Whoever holds the section still may write to it; it is no
            # longer kept (asked for again, it starts empty).
            del self._sections[kind]
            entries.clear()
            if total <= budget:
                break
