"""Who holds what, for the what-if extensions: consumers' allocations read
from the database as the engine takes them, and the world's preemptible
consumers kept from one request to the next.

``preempt=true`` (docs/extensions/preempt.md) needs every preemptible
consumer's allocations.  Reading them all for every request costs in
proportion to their number, so the world keeps them (in a section of its
cache, with the world without them and the eviction sets found) and reads
again only where it changed: its log of touched providers
(``LiveSnapshot.touched_since``) names the providers whose usage moved, and
only the preemptible consumers holding something on those are read again
(a consumer whose allocations change moves the usage of every provider it
leaves or joins, and is dropped from every one).

The world is brought up to date before each request and held still while
this runs, and what is read from the database is at least as new as the
world, so what is kept of a provider is never older than the world's view
of it.  Every allocation write moves the generation of the providers it
writes on, which touches them: a consumer written again with the very same
amounts (a new type, a new generation) is read again too.  Should an
eviction set still carry a generation that has moved on (a write the world
had not seen yet), the write that evicts is refused with a 409 (generations
are checked), never applied to a consumer that changed.

A world rebuilt from the database (the database went back, a renamed class)
is a new snapshot: nothing kept of the old one is used with it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Sequence

from sqlalchemy.engine import Row

from allotment.engine.live import LiveSnapshot
from allotment.engine.whatif import Holding, Preemptible, preemptible_of
from allotment.storage import holdings as store
from allotment.storage.db import Database
from allotment.world.model import World

# Reads the preemptible consumers holding something: all of them (None), or
# those holding something on one of the providers named.
Read = Callable[[Collection[str] | None], Iterable[Holding]]


def holdings(rows: Iterable[Row]) -> list[Holding]:
    """Rows of ``storage.holdings`` as one :class:`Holding` per consumer."""
    found: dict[str, tuple[Row, dict[str, dict[str, int]]]] = {}
    for row in rows:
        entry = found.get(row.consumer_uuid)
        if entry is None:
            entry = found[row.consumer_uuid] = (row, {})
        if row.provider_uuid is not None:
            entry[1].setdefault(row.provider_uuid, {})[row.resource_class] = int(row.used)
    return [Holding(uuid, allocs, int(row.consumer_generation), row.project_id,
                    row.user_id, row.consumer_type)
            for uuid, (row, allocs) in found.items()]


class UnknownConsumers(LookupError):
    """Consumers a question names that hold nothing (or do not exist)."""

    def __init__(self, uuids: Sequence[str]) -> None:
        super().__init__(", ".join(uuids))
        self.uuids = tuple(uuids)


def named(db: Database, uuids: Sequence[str]) -> tuple[Holding, ...]:
    """What each of the consumers ``uuids`` holds, in the order given (a
    repeated one once); :class:`UnknownConsumers` names those that do not
    exist."""
    with db.read() as conn:
        held = {h.consumer: h for h in holdings(store.of_consumers(conn, uuids))}
    unknown = sorted({u for u in uuids if u not in held})
    if unknown:
        raise UnknownConsumers(unknown)
    return tuple(held[u] for u in dict.fromkeys(uuids))


def current(world: World, db: Database, types: Sequence[str]) -> Preemptible:
    """The consumers of the preemptible ``types`` in ``world`` (held still
    by the caller) as it is now."""
    names = tuple(sorted(set(types)))

    def read(providers: Collection[str] | None) -> list[Holding]:
        if not names or (providers is not None and not providers):
            return []
        with db.read() as conn:
            return holdings(store.of_consumer_types(conn, names) if providers is None
                            else store.of_consumer_types_on(conn, names, providers))

    return brought_up(world.snapshot, world.cache.section("preemptible"),
                      ("preemptible", names), read)


def brought_up(snap: LiveSnapshot, section: dict, key: Hashable, read: Read) -> Preemptible:
    """What ``section`` keeps under ``key``, brought to ``snap`` as it is
    now: read whole where nothing is kept for ``snap``, read again on the
    providers touched since otherwise, and kept again."""
    kept: Preemptible | None = section.get(key)
    mark = snap.touch_mark()
    touched = None
    if kept is not None and kept.snap is snap:
        touched = snap.touched_since(kept.mark)
    if touched is None:
        found = preemptible_of(snap, {h.consumer: h for h in read(None)}, mark)
    elif not touched:
        return kept
    else:
        uuids = snap.uuids
        changed = {uuids[i] for i in touched if i < len(uuids) and uuids[i] is not None}
        by_consumer = {c: h for c, h in kept.by_consumer.items()
                       if not any(p in changed for p in h.allocations)}
        if changed:
            by_consumer.update((h.consumer, h) for h in read(sorted(changed)))
        found = preemptible_of(snap, by_consumer, mark)
    section[key] = found
    return found
