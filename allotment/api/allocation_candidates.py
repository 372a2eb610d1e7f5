"""GET /allocation_candidates (from 1.10)."""

from __future__ import annotations

import dataclasses
import functools

import falcon

from allotment import telemetry
from allotment.api import candidates_extensions, query, rendering
from allotment.api.candidates_codec import (
    DICT_REQUESTS,
    MAPPINGS,
    SUMMARY_TREE,
    allocation_request,
    assembled_body,
    encoded_request,
    encoded_summaries,
)
from allotment.api.candidates_query import parse_allocation_candidates_query
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.packed import Packed
from allotment.engine.plan import Candidate
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.whatif import WhatIf
from allotment.service import allocation_candidates as service
from allotment.service import headroom as headroom_service
from allotment.service import whatif as whatif_service


@functools.lru_cache(maxsize=1024)
def _parse(pairs: tuple[tuple[str, str], ...],
           want: tuple[int, int]) -> AllocationCandidatesRequest:
    """The request a query means: a pure function of the query and the
    microversion, and schedulers ask the same few queries over and over
    (schema validation was a third of a small answer's time).  Refused
    queries raise, and are not kept."""
    return parse_allocation_candidates_query(pairs, want)


class AllocationCandidates(Resource):
    world_reads = ("GET",)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.10")
        authorize(req, "placement:allocation_candidates:list")
        want = version(req)
        explain_limit = None
        headroom = False
        if candidates_extensions.requested(req.get_header(candidates_extensions.HEADER)):
            parsed = candidates_extensions.parse_extended_query(query.pairs(req), want)
            wanted, request = parsed.request, parsed.request.base
            explain_limit = parsed.explain_limit
            headroom = parsed.headroom
            if parsed.ignore_consumers or parsed.preempt:
                wanted = self._what_if(req, parsed)
        else:
            wanted = request = _parse(query.frozen_pairs(req), want)
        placement = self.conf.placement
        # From 1.29 (summaries of whole trees) an answer may be kept encoded
        # tree by tree, written as ``want`` shows it; from 1.34 (the shape
        # packed trees are written in) trees may come packed.
        found = service.find(
            self.replica, wanted,
            max_candidates=placement.max_allocation_candidates,
            strategy=placement.allocation_candidates_generation_strategy,
            randomize=placement.randomize_allocation_candidates,
            explain_limit=explain_limit, packed=want >= MAPPINGS,
            encoded_as=want if want >= SUMMARY_TREE else None)
        if found.encoded is not None:
            telemetry.metrics().candidates.observe(len(found.encoded.requests))
            rendering.send_encoded(req, resp, assembled_body(
                found.encoded.requests, found.encoded.summaries))
            return
        telemetry.metrics().candidates.observe(
            sum(c.count if isinstance(c, Packed) else 1 for c in found.candidates))
        # One section per shape of allocation request.
        encoded = ({} if found.cache is None else found.cache.section(
            ("encoded-request", want >= DICT_REQUESTS, want >= MAPPINGS)))
        body = {
            "allocation_requests": (
                [encoded_request(c, want, encoded) for c in found.candidates]
                if found.what_if is None else
                [what_if_request(c, note, want)
                 for c, note in zip(found.candidates, found.what_if, strict=True)]),
            "provider_summaries": encoded_summaries(found, request, want),
        }
        if found.explanation is not None:
            body["explanation"] = found.explanation.as_dict()
        if headroom:
            body["headroom"] = headroom_service.compute(self.replica, wanted).as_dict()
        rendering.send_json(req, resp, body)

    def _what_if(self, req: falcon.Request, parsed: candidates_extensions.ExtendedQuery,
                 ) -> ExtendedRequest:
        """The request with the consumers it asks about, read as
        ``GET /allocations/{consumer}`` would read them (and so with its
        policy)."""
        authorize(req, "placement:allocations:list")
        ignored = (whatif_service.consumers(self.db, parsed.ignore_consumers)
                   if parsed.ignore_consumers else ())
        preemptible = None
        if parsed.preempt:
            preemptible = whatif_service.preemptible(
                self.db, self.conf.allotment.preemptible_consumer_types)
        return dataclasses.replace(parsed.request, ignored=ignored, preemptible=preemptible)


def what_if_request(cand: Candidate, note: WhatIf, want: tuple[int, int]) -> dict:
    """An allocation request of a what-if answer (docs/extensions/
    ignore-consumers.md, preempt.md)."""
    body = allocation_request(cand, want)
    if note.displaces is not None:
        body["displaces"] = list(note.displaces)
    if note.evicts is not None:
        body["evicts"] = [{"consumer_uuid": h.consumer,
                           "consumer_generation": h.generation,
                           "project_id": h.project_id, "user_id": h.user_id,
                           "consumer_type": h.consumer_type} for h in note.evicts]
    return body
