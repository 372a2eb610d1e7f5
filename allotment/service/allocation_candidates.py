"""GET /allocation_candidates: the engine's answer over the current world.

The answer is worked out over the process's in-memory world
(``allotment.world``), which is brought up to date with every change
committed before the request began -- usually by one read of the change
feed that finds nothing new -- and held still while the engine looks at it
(``allotment.engine.answer``, which does the rest).
"""

from __future__ import annotations

from typing import Unpack

from allotment import errors, telemetry
from allotment.engine.answer import Answer, Options, UnknownName, answer
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.world.sync import Replica


def find(replica: Replica, request: AllocationCandidatesRequest | ExtendedRequest,
         **options: Unpack[Options]) -> Answer:
    """The engine's answer to ``request`` (see ``engine.answer.answer`` for
    the ``options``) over the world as it stands now.

    Raises errors.BadRequest for resource classes or traits that do not
    exist, in the order Placement checks them.
    """
    with replica.current() as world:
        try:
            found = answer(world, request, **options)
        except UnknownName as exc:
            raise errors.BadRequest(str(exc)) from None
    if found.kept_hits:
        telemetry.metrics().kept_hits.inc(found.kept_hits)
    return found
