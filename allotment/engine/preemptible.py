"""The preemptible consumers of the world, kept from one request to the next.

``preempt=true`` (docs/extensions/preempt.md) needs every preemptible
consumer's allocations: the world without all of them is where the
candidates that might fit once some go are searched, and the consumers on
a candidate's providers are its possible victims.  Reading them all from
the database for every request costs in proportion to their number, so
they are kept per world, with the world without them, and read again only
where the world changed: the world's log of touched providers
(``LiveSnapshot.touched_since``) names the providers whose usage moved,
and only the preemptible consumers holding something on those are read
again (a consumer whose allocations change moves the usage of every
provider it leaves or joins, and is dropped from every one).

The world is brought up to date before each request, and what is read
from the database is at least as new as the world, so what is kept of a
provider is never older than the world's view of it.  Every allocation
write moves the generation of the providers it writes on, which touches
them: a consumer written again with the very same amounts (a new type, a
new generation) is read again too.  Should an eviction set still carry a
generation that has moved on (a write the world had not seen yet), the
write that evicts is refused with a 409 (generations are checked), never
applied to a consumer that changed.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from allotment.engine.live import LiveSnapshot
from allotment.engine.whatif import Holding, by_provider, without


class Reader(Protocol):
    """Reads preemptible consumers with everything they hold."""

    # Names what is read (the configured types): what is kept is kept per key.
    key: Hashable

    def __call__(self, providers: Collection[str] | None) -> Iterable[Holding]:
        """Every preemptible consumer holding something (``providers``
        None), or those holding something on one of ``providers``."""


@dataclass(frozen=True)
class Preemptible:
    """The preemptible consumers of one state of the world."""

    holdings: tuple[Holding, ...]
    # Consumer UUID -> what it holds.
    by_consumer: dict[str, Holding]
    # Provider UUID -> the consumers holding something on it.
    on_provider: dict[str, list[Holding]]
    # The world without any of them (made when first asked for).
    snap: LiveSnapshot
    mark: int
    _wide: list
    # Candidate (its allocations) -> its eviction set in this state of the
    # world: a new state makes a new Preemptible, so nothing here outlives
    # the usage, inventories and consumers it was worked out from.
    evictions: dict = field(default_factory=dict)

    def wide(self) -> LiveSnapshot:
        """The world without any preemptible consumer's allocations."""
        if not self._wide:
            self._wide.append(without(self.snap, self.holdings))
        return self._wide[0]


def _made(snap: LiveSnapshot, by_consumer: dict[str, Holding], mark: int) -> Preemptible:
    held = tuple(by_consumer[c] for c in sorted(by_consumer))
    return Preemptible(held, by_consumer, by_provider(held), snap, mark, [])


def given(snap: LiveSnapshot, holdings: Sequence[Holding]) -> Preemptible:
    """Preemptible consumers handed in as they are (kept nowhere)."""
    return _made(snap, {h.consumer: h for h in holdings}, snap.touch_mark())


def current(snap: LiveSnapshot, section: dict, read: Reader) -> Preemptible:
    """The preemptible consumers of ``snap`` as it is now, from what
    ``section`` (a section of the world's cache) keeps, read again where
    the world changed since."""
    kept: Preemptible | None = section.get(read.key)
    mark = snap.touch_mark()
    touched = None
    if kept is not None and kept.snap is snap:
        touched = snap.touched_since(kept.mark)
    if touched is None:
        found = _made(snap, {h.consumer: h for h in read(None)}, mark)
    elif not touched:
        return kept
    else:
        uuids = snap.uuids
        changed = {uuids[i] for i in touched if i < len(uuids) and uuids[i] is not None}
        by_consumer = {c: h for c, h in kept.by_consumer.items()
                       if not any(p in changed for p in h.allocations)}
        if changed:
            by_consumer.update((h.consumer, h) for h in read(sorted(changed)))
        found = _made(snap, by_consumer, mark)
    section[read.key] = found
    return found
