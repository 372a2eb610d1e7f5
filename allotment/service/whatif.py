"""Who holds what, for the what-if extensions of GET /allocation_candidates
(docs/extensions/ignore-consumers.md, preempt.md): the consumers' allocations
read from the database, as the engine takes them (engine.whatif.Holding)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from sqlalchemy.engine import Row

from allotment import errors
from allotment.engine.whatif import Holding
from allotment.storage import holdings as store
from allotment.storage.db import Database

UNKNOWN_CONSUMER = "allotment.consumer.unknown"


def _holdings(rows: Iterable[Row]) -> list[Holding]:
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


def consumers(db: Database, uuids: Sequence[str]) -> tuple[Holding, ...]:
    """What each consumer holds, in the order given; 400 naming the
    consumers that do not exist."""
    with db.read() as conn:
        held = {h.consumer: h for h in _holdings(store.of_consumers(conn, uuids))}
    unknown = sorted({u for u in uuids if u not in held})
    if unknown:
        raise errors.BadRequest(
            f"Unknown consumers in 'ignore_consumers': {', '.join(unknown)}.",
            code=UNKNOWN_CONSUMER)
    return tuple(held[u] for u in dict.fromkeys(uuids))


class PreemptibleReader:
    """Reads the consumers of the preemptible types for the engine, which
    keeps them in the world and asks again only about providers whose
    usage moved (engine.preemptible)."""

    def __init__(self, db: Database, types: Sequence[str]) -> None:
        self.db = db
        self.types = tuple(sorted(set(types)))
        self.key = ("preemptible", self.types)

    def __call__(self, providers: Collection[str] | None) -> list[Holding]:
        """Every consumer of one of the types that holds something, or
        (``providers``) those holding something on one of them."""
        if not self.types or (providers is not None and not providers):
            return []
        with self.db.read() as conn:
            rows = (store.of_consumer_types(conn, self.types) if providers is None
                    else store.of_consumer_types_on(conn, self.types, providers))
            return _holdings(rows)


def preemptible(db: Database, types: Sequence[str]) -> PreemptibleReader:
    """The preemptible consumers of ``types``, read as the engine needs them."""
    return PreemptibleReader(db, types)
