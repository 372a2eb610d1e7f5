"""GET /allocation_candidates: everything below the API, in one call.

:func:`answer` takes the typed question the API read from the request
(:class:`Question`) and hands back one typed result (:class:`Found`): the
consumers a what-if question names, read from the database
(docs/extensions/ignore-consumers.md, preempt.md; the preemptible ones
kept in the world, allotment.world.preemptible), the engine's answer
(``allotment.engine.answer``) and, when asked, the headroom
(``allotment.engine.headroom``).

Answers are worked out over the process's in-memory world
(``allotment.world``), which is brought up to date with every change
committed before the request began -- usually by one read of the change
feed that finds nothing new -- and held still while the engine looks at it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from allotment import errors, telemetry
from allotment.engine import headroom as engine_headroom
from allotment.engine import whatif
from allotment.engine.answer import Answer, UnknownName, preemptible_world
from allotment.engine.answer import answer as engine_answer
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.storage import holdings as store
from allotment.storage.db import Database
from allotment.world import preemptible
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
    ignored = consumers(db, question.ignore_consumers) if question.ignore_consumers else ()
    # One state of the world for the candidates and the headroom alike.
    with replica.current() as world:
        if ignored or question.preempt:
            request = dataclasses.replace(
                request, ignored=ignored,
                preemptible=preemptible.current(world, db, question.preemptible_types)
                if question.preempt else None)
        try:
            found = engine_answer(
                world, request, max_candidates=question.max_candidates,
                strategy=question.strategy, randomize=question.randomize,
                explain_limit=question.explain_limit, packed=question.packed,
                encoded_as=question.encoded_as)
        except UnknownName as exc:
            raise errors.BadRequest(str(exc)) from None
        # An answer comes encoded for plain requests only, and headroom is
        # an extension: an encoded answer never has any.
        room = of_world(world, request) if question.headroom else None
    if found.kept_hits:
        telemetry.metrics().kept_hits.inc(found.kept_hits)
    return Found(found, room)


def consumers(db: Database, uuids: Sequence[str]) -> tuple[whatif.Holding, ...]:
    """What each consumer holds, in the order given; 400 naming the
    consumers that do not exist."""
    with db.read() as conn:
        held = {h.consumer: h for h in preemptible.holdings(store.of_consumers(conn, uuids))}
    unknown = sorted({u for u in uuids if u not in held})
    if unknown:
        raise errors.BadRequest(
            f"Unknown consumers in 'ignore_consumers': {', '.join(unknown)}.",
            code=UNKNOWN_CONSUMER)
    return tuple(held[u] for u in dict.fromkeys(uuids))


# ---------------------------------------------------------------------------
# How many more instances of a request fit (engine.headroom), with the names
# renderers show.


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
    """How many more instances of ``request`` fit in ``world`` (held still
    by the caller), with the names renderers show.  The count is
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
