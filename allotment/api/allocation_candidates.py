"""GET /allocation_candidates (from 1.10).

The request flows one way: the handler reads everything it needs of the
request in one pass (:class:`CandidatesQuery`: the typed question for the
service and the plain values the answer is written with), the service
answers the question in one call (``allotment.service.allocation_candidates``)
and the handler writes that answer (``api.candidates_codec``), without
looking at the request again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import falcon

from allotment import telemetry
from allotment.api import candidates_extensions, query, rendering
from allotment.api.candidates_codec import (
    MAPPINGS,
    SUMMARY_TREE,
    answer_body,
    assembled_body,
    shown_classes,
)
from allotment.api.candidates_query import read_standard_query, typed_request
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.engine.answer import Answer
from allotment.engine.packed import Packed
from allotment.engine.request import AllocationCandidatesRequest
from allotment.service import allocation_candidates as service


@functools.lru_cache(maxsize=1024)
def _parse(pairs: tuple[tuple[str, str], ...], want: tuple[int, int],
           ) -> tuple[AllocationCandidatesRequest, frozenset[str] | None]:
    """The request a query means, and the classes its summaries show: a
    pure function of the query and the microversion, and schedulers ask
    the same few queries over and over (schema validation was a third of a
    small answer's time).  Refused queries raise, and are not kept."""
    query = read_standard_query(pairs, want)
    shown = shown_classes(query.requested_classes(), want)
    return typed_request(query), shown


@dataclass(frozen=True)
class CandidatesQuery:
    """Everything a ``GET /allocation_candidates`` asks, read from it once."""

    question: service.Question
    # The microversion the answer is written at.
    want: tuple[int, int]
    # Whether the answer carries last-modified and cache-control.
    cache_headers: bool
    # The resource classes provider summaries show; None for all.
    shown: frozenset[str] | None


class AllocationCandidates(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        asked = self.read(req)
        write(resp, asked, service.answer(self.db, self.replica, asked.question))

    def read(self, req: falcon.Request) -> CandidatesQuery:
        """The query of ``req``, checked: 4xx for anything refused."""
        require_version(req, "1.10")
        authorize(req, "placement:allocation_candidates:list")
        want = version(req)
        cache_headers = rendering.cache_headers_at(want)
        ctx = req.context.ctx
        placement = self.conf.placement
        # From 1.29 (summaries of whole trees) an answer may be kept encoded
        # tree by tree, written as ``want`` shows it; from 1.34 (the shape
        # packed trees are written in) trees may come packed.
        settings = {"max_candidates": placement.max_allocation_candidates,
                    "strategy": placement.allocation_candidates_generation_strategy,
                    "randomize": placement.randomize_allocation_candidates,
                    "rotate": self.conf.allotment.rotate_allocation_candidates,
                    "packed": want >= MAPPINGS,
                    "encoded_as": want if want >= SUMMARY_TREE else None}
        if not candidates_extensions.requested(req.get_header(candidates_extensions.HEADER)):
            request, shown = _parse(query.frozen_pairs(req), want)
            return CandidatesQuery(service.Question(request, **settings), want,
                                   cache_headers, shown)
        parsed = candidates_extensions.parse_extended_query(query.pairs(req), want)
        if parsed.ignore_consumers or parsed.preempt:
            # The consumers are read as ``GET /allocations/{consumer}``
            # would read them, and so with its policy.
            ctx.can("placement:allocations:list")
        question = service.Question(
            parsed.request, explain_limit=parsed.explain_limit,
            headroom=parsed.headroom, ignore_consumers=parsed.ignore_consumers,
            preempt=parsed.preempt,
            preemptible_types=tuple(self.conf.allotment.preemptible_consumer_types),
            **settings)
        # Extensions need a microversion (1.36) whose summaries show every
        # class: None, whatever the groups request.
        return CandidatesQuery(question, want, cache_headers, None)


def write(resp: falcon.Response, asked: CandidatesQuery, answer: Answer) -> None:
    """Write ``answer`` to ``asked``."""
    if answer.encoded is not None:
        telemetry.metrics().candidates.observe(answer.encoded.count)
        data = assembled_body(answer.encoded.requests, answer.encoded.summaries)
    else:
        telemetry.metrics().candidates.observe(
            sum(c.count if isinstance(c, Packed) else 1 for c in answer.candidates))
        data = rendering.dumps(answer_body(answer, asked.want, asked.shown))
    rendering.write_json(resp, data, cache_headers=asked.cache_headers)
