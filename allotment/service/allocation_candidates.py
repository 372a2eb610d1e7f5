"""GET /allocation_candidates: the engine's answer over the current world.

The answer is worked out over the process's in-memory world
(``allotment.world``), which is brought up to date with every change
committed before the request began -- usually by one read of the change
feed that finds nothing new -- and held still while the engine looks at it
(``allotment.engine.answer``, which does the rest).
"""

from __future__ import annotations

import random
from collections.abc import Hashable

from allotment import errors, telemetry
from allotment.engine.answer import Answer, UnknownName, answer
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.world.sync import Replica


def find(
    replica: Replica,
    request: AllocationCandidatesRequest | ExtendedRequest,
    *,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
    explain_limit: int | None = None,
    packed: bool = False,
    encoded_as: Hashable | None = None,
) -> Answer:
    """The engine's answer to ``request`` (see ``engine.answer.answer`` for
    the arguments) over the world as it stands now.

    Raises errors.BadRequest for resource classes or traits that do not
    exist, in the order Placement checks them.
    """
    with replica.current() as world:
        try:
            found = answer(world, request, max_candidates=max_candidates, strategy=strategy,
                           randomize=randomize, rng=rng, explain_limit=explain_limit,
                           packed=packed, encoded_as=encoded_as)
        except UnknownName as exc:
            raise errors.BadRequest(str(exc)) from None
    if found.kept_hits:
        telemetry.metrics().kept_hits.inc(found.kept_hits)
    return found
