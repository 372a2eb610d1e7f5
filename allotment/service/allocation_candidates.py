"""GET /allocation_candidates: everything below the API, in one call.

:func:`answer` takes the typed question the API read from the request
(:class:`Question`) and hands back the engine's typed answer: it reads the
consumers a what-if question names from the database
(docs/extensions/ignore-consumers.md, preempt.md; the preemptible ones
kept in the world, allotment.world.preemptible) and asks the engine's one
entry point (``allotment.engine.answer``) for the candidates and, when
asked, the headroom.

Answers are worked out over the process's in-memory world
(``allotment.world``), which is brought up to date with every change
committed before the request began -- usually by one read of the change
feed that finds nothing new -- and held still while the engine looks at it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass

from allotment import errors, telemetry
from allotment.engine.answer import Answer, UnknownName
from allotment.engine.answer import answer as engine_answer
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.headroom_answer import HeadroomAnswer, headroom_of
from allotment.engine.request import AllocationCandidatesRequest
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


def answer(db: Database, replica: Replica, question: Question) -> Answer:
    """The answer to ``question`` over the world as it stands now.

    Raises errors.BadRequest for consumers, resource classes or traits
    that do not exist, in the order Placement checks them.
    """
    request = question.request
    # One state of the world for the candidates and the headroom alike; the
    # consumers a what-if question names are read while it is held, so they
    # are at least as new as it.
    with replica.current() as world:
        try:
            if question.ignore_consumers or question.preempt:
                request = dataclasses.replace(
                    request,
                    preemptible=preemptible.current(world, db, question.preemptible_types)
                    if question.preempt else None,
                    ignored=preemptible.named(db, question.ignore_consumers)
                    if question.ignore_consumers else ())
            found = engine_answer(
                world, request, max_candidates=question.max_candidates,
                strategy=question.strategy, randomize=question.randomize,
                rotate=question.rotate, explain_limit=question.explain_limit,
                packed=question.packed, encoded_as=question.encoded_as,
                headroom=question.headroom)
        except UnknownName as exc:
            raise errors.BadRequest(str(exc)) from None
        except preemptible.UnknownConsumers as exc:
            raise errors.BadRequest(
                f"Unknown consumers in 'ignore_consumers': {exc}.",
                code=UNKNOWN_CONSUMER) from None
    if found.kept_hits:
        telemetry.metrics().kept_hits.inc(found.kept_hits)
    return found


def compute_many(replica: Replica, requests: dict[str, AllocationCandidatesRequest],
                 *, with_hosts: bool = True) -> dict[str, HeadroomAnswer]:
    """How many more instances of several named requests (flavors) fit in
    one state of the world."""
    with replica.current() as world:
        return {name: headroom_of(world, req, with_hosts=with_hosts)
                for name, req in requests.items()}
