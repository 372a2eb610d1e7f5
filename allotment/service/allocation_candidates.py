"""GET /allocation_candidates: everything below the API, in one call.

:func:`answer` takes the typed question the API read from the request
(:class:`Question`) and hands back one typed result (:class:`Found`): the
consumers a what-if question names, read from the database
(docs/extensions/ignore-consumers.md, preempt.md), the engine's answer
(``allotment.engine.answer``) and, when asked, the headroom
(``allotment.engine.headroom``).

Answers are worked out over the process's in-memory world
(``allotment.world``), which is brought up to date with every change
committed before the request began -- usually by one read of the change
feed that finds nothing new -- and held still while the engine looks at it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Unpack

from sqlalchemy.engine import Row

from allotment import errors, telemetry
from allotment.engine import headroom as engine_headroom
from allotment.engine import whatif
from allotment.engine.answer import Answer, Options, UnknownName, preemptible_world
from allotment.engine.answer import answer as engine_answer
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.storage import holdings as store
from allotment.storage.db import Database
from allotment.world.sync import Replica

UNKNOWN_CONSUMER = "allotment.consumer.unknown"


@dataclass(frozen=True)
class Question:
    """One ``GET /allocation_candidates`` as the API read it, with the
    settings that shape the search."""

    request: AllocationCandidatesRequest | ExtendedRequest
    max_candidates: int = -1
    strategy: str = "depth-first"
    randomize: bool = False
    # Rounds start at a host that moves on as the world changes.
    rotate: bool = False
    # Trees to explain at most; None when no explanation was asked for.
    explain_limit: int | None = None
    # Whole trees may come packed (engine.packed), and an answer kept tree
    # by tree may come encoded in this shape (engine.rounds).
    packed: bool = False
    encoded_as: Hashable | None = None
    # Whether the answer also says how many more instances fit.
    headroom: bool = False
    # Consumers whose allocations the answer is worked out without.
    ignore_consumers: tuple[str, ...] = ()
    # Whether candidates that fit once preemptible consumers go are wanted,
    # and the consumer types that are preemptible.
    preempt: bool = False
    preemptible_types: tuple[str, ...] = ()


class HostCount(NamedTuple):
    # A tuple: a flavor's count at 10,000 hosts makes 10,000 of them.
    uuid: str
    name: str
    count: int


@dataclass(frozen=True)
class Headroom:
    total: int
    hosts: list[HostCount]  # by name
    aggregates: dict[str, int]
    largest: dict[str, int]
    # With preempt=true: the same counted with every preemptible consumer gone.
    with_preemption: Headroom | None = None

    def as_dict(self) -> dict:
        body = {"total": self.total,
                "hosts": [{"uuid": h.uuid, "name": h.name, "count": h.count}
                          for h in self.hosts],
                "aggregates": dict(sorted(self.aggregates.items())),
                "largest": dict(sorted(self.largest.items()))}
        if self.with_preemption is not None:
            body["with_preemption"] = self.with_preemption.as_dict()
        return body


@dataclass(frozen=True)
class Found:
    """What :func:`answer` hands back to be written."""

    answer: Answer
    # Only when the question asked for it.
    headroom: Headroom | None = None


def answer(db: Database, replica: Replica, question: Question) -> Found:
    """The answer to ``question`` over the world as it stands now.

    Raises errors.BadRequest for consumers, resource classes or traits
    that do not exist, in the order Placement checks them.
    """
    request = question.request
    if question.ignore_consumers or question.preempt:
        request = dataclasses.replace(
            request,
            ignored=consumers(db, question.ignore_consumers) if question.ignore_consumers
            else (),
            preemptible=preemptible(db, question.preemptible_types) if question.preempt
            else None)
    found = find(replica, request, max_candidates=question.max_candidates,
                 strategy=question.strategy, randomize=question.randomize,
                 rotate=question.rotate,
                 explain_limit=question.explain_limit, packed=question.packed,
                 encoded_as=question.encoded_as)
    # An answer comes encoded for plain requests only, and headroom is an
    # extension: an encoded answer never has any.
    room = compute(replica, request) if question.headroom else None
    return Found(found, room)


def find(replica: Replica, request: AllocationCandidatesRequest | ExtendedRequest,
         **options: Unpack[Options]) -> Answer:
    """The engine's answer to ``request`` (see ``engine.answer.answer`` for
    the ``options``) over the world as it stands now."""
    with replica.current() as world:
        try:
            found = engine_answer(world, request, **options)
        except UnknownName as exc:
            raise errors.BadRequest(str(exc)) from None
    if found.kept_hits:
        telemetry.metrics().kept_hits.inc(found.kept_hits)
    return found


# ---------------------------------------------------------------------------
# Who holds what, for the what-if extensions: the consumers' allocations read
# from the database, as the engine takes them (engine.whatif.Holding).


def _holdings(rows: Iterable[Row]) -> list[whatif.Holding]:
    found: dict[str, tuple[Row, dict[str, dict[str, int]]]] = {}
    for row in rows:
        entry = found.get(row.consumer_uuid)
        if entry is None:
            entry = found[row.consumer_uuid] = (row, {})
        if row.provider_uuid is not None:
            entry[1].setdefault(row.provider_uuid, {})[row.resource_class] = int(row.used)
    return [whatif.Holding(uuid, allocs, int(row.consumer_generation), row.project_id,
                           row.user_id, row.consumer_type)
            for uuid, (row, allocs) in found.items()]


def consumers(db: Database, uuids: Sequence[str]) -> tuple[whatif.Holding, ...]:
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
    usage moved (engine.whatif.current)."""

    def __init__(self, db: Database, types: Sequence[str]) -> None:
        self.db = db
        self.types = tuple(sorted(set(types)))
        self.key = ("preemptible", self.types)

    def __call__(self, providers: Collection[str] | None) -> list[whatif.Holding]:
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


# ---------------------------------------------------------------------------
# How many more instances of a request fit (engine.headroom), with the names
# renderers show.


def compute(replica: Replica, request: AllocationCandidatesRequest | ExtendedRequest,
            ) -> Headroom:
    with replica.current() as world:
        return of_world(world, request)


def _trees(world) -> engine_headroom.Trees:
    """The trees at the world's current state (engine.headroom_trees),
    worked out once per state for every request and kept in the world."""
    kept = world.memo("headroom_trees")
    trees = kept.get("trees")
    if trees is None or not trees.unchanged(world.snapshot):
        trees = kept["trees"] = engine_headroom.Trees(world.snapshot, trees)
    return trees


def of_world(world, request: AllocationCandidatesRequest | ExtendedRequest,
             *, with_hosts: bool = True) -> Headroom:
    """:func:`compute` over a world the caller already holds.  The count is
    kept in the world, per request, and moved to the next state of the
    world by counting again only the trees that changed.  ``with_hosts``
    false leaves ``hosts`` empty (naming every host costs)."""
    snap = world.snapshot
    if isinstance(request, ExtendedRequest) and request.is_what_if:
        # Counted in the world without the ignored consumers, made for
        # this request and kept nowhere; with preemption, counted again
        # without every preemptible consumer as well.
        if request.ignored:
            snap = whatif.without(snap, request.ignored)
        plain = dataclasses.replace(request, ignored=(), preemptible=None)
        counted = _counted(snap, engine_headroom.count(snap, plain), with_hosts)
        if request.preemptible is None:
            return counted
        wide, _, _ = preemptible_world(world, request, snap)
        return dataclasses.replace(
            counted,
            with_preemption=_counted(wide, engine_headroom.count(wide, plain), with_hosts))
    # Requests hold mappings (not hashable): their text names their kind.
    memo = world.memo(("headroom", repr(request)))
    found = engine_headroom.count(snap, request, memo=memo, trees=_trees(world))
    return _counted(snap, found, with_hosts)


def _counted(snap, found: engine_headroom.Headroom, with_hosts: bool) -> Headroom:
    hosts = []
    if with_hosts:
        name_of, index = snap.name_of, snap.index
        hosts = sorted((HostCount(uuid, name_of(index[uuid]), n)
                        for uuid, n in found.per_host.items()), key=lambda h: (h.name, h.uuid))
    return Headroom(found.total, hosts, found.per_aggregate, found.largest)


def compute_many(replica: Replica, requests: dict[str, AllocationCandidatesRequest],
                 *, with_hosts: bool = True) -> dict[str, Headroom]:
    """Several named requests (flavors) against one state of the world."""
    with replica.current() as world:
        return {name: of_world(world, req, with_hosts=with_hosts)
                for name, req in requests.items()}
