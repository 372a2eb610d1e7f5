"""GET /allocation_candidates (from 1.10)."""

from __future__ import annotations

import functools
import itertools

import falcon
import orjson

from allotment import telemetry
from allotment.api import candidates_extensions, query, rendering
from allotment.api.candidates_query import parse_allocation_candidates_query
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.engine.packed import Packed
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.search import Candidate
from allotment.service import allocation_candidates as service
from allotment.service import candidate_rounds
from allotment.service import headroom as headroom_service

# Where the response grows, by microversion.
_DICT_REQUESTS = (1, 12)
_SUMMARY_TRAITS = (1, 17)
_SUMMARY_ALL_CLASSES = (1, 27)
_SUMMARY_TREE = (1, 29)
_MAPPINGS = (1, 34)


def _allocation_request(cand: Candidate, want: tuple[int, int]) -> dict:
    if want < _DICT_REQUESTS:
        # The body of PUT /allocations/{consumer} before 1.12.
        return {"allocations": [
            {"resource_provider": {"uuid": uuid}, "resources": dict(resources)}
            for uuid, resources in cand.allocations.items()]}
    # The engine's dicts and lists go to the encoder as they are (it only
    # reads them): a big answer is mostly these, one per candidate.
    body: dict = {"allocations": {
        uuid: {"resources": resources} for uuid, resources in cand.allocations.items()}}
    if want >= _MAPPINGS:
        body["mappings"] = cand.mappings
    return body


def _encoded_request(cand: Candidate | Packed, want: tuple[int, int],
                     encoded: dict) -> dict | orjson.Fragment:
    """The allocation request of ``cand``; encoded once for a candidate the
    engine hands out again (a host that did not change since the last such
    request), and kept in ``encoded`` (the section of the world's cache for
    this shape of request) for as long as the engine keeps it.  A packed tree (asked for from 1.34
    only, whose rendering it holds) is all of its tree's allocation
    requests, joined by commas: as one element of the list they come out as
    its elements."""
    if type(cand) is Packed:
        return orjson.Fragment(cand.encoded())
    if not cand.reused:
        return _allocation_request(cand, want)
    # By the object itself: the entry holds it, so its id is not reused
    # while the entry is there.
    kept = encoded.get(id(cand))
    if kept is not None and kept[0] is cand:
        return kept[1]
    fragment = rendering.fragment(_allocation_request(cand, want))
    encoded[id(cand)] = (cand, fragment)
    return fragment


def _summary_body(s: service.ProviderSummary, requested: frozenset[str] | None,
                  want: tuple[int, int]) -> dict:
    body: dict = {"resources": {
        rc: {"capacity": capacity, "used": used}
        for rc, (capacity, used) in s.resources.items()
        if requested is None or rc in requested}}
    if want >= _SUMMARY_TRAITS:
        body["traits"] = list(s.traits)
    if want >= _SUMMARY_TREE:
        body["parent_provider_uuid"] = s.parent_uuid
        body["root_provider_uuid"] = s.root_uuid
    return body


def _encoded_summaries(found: service.CandidatesResult,
                       request: AllocationCandidatesRequest,
                       want: tuple[int, int]) -> dict:
    """Encoded summaries by provider.  Each is kept, by (provider, what the
    microversion shows), with the summary revision it was made at: a
    provider's summary is the same from one request to the next until it
    changes, and most of a big answer is summaries.  From 1.29 whole trees'
    are kept too, with the tuple of summaries they were made from (the
    service hands out the same tuple for as long as the tree stays as it
    is): a big answer from 1.29 is mostly trees unchanged since the last."""
    requested = None
    if want < _SUMMARY_ALL_CLASSES:
        requested = frozenset(rc for g in request.groups for rc in g.resources)
    shape = (want >= _SUMMARY_TRAITS, want >= _SUMMARY_TREE, requested)
    if found.cache is None:
        return {s.uuid: _summary_body(s, requested, want) for s in found.summaries}
    encoded = found.cache.section("encoded-summary")
    if found.by_tree is None:
        return {s.uuid: _encoded_summary(encoded, s, shape, requested, want)
                for s in found.summaries}
    trees = found.cache.section("encoded-summary-tree")
    result: dict = {}
    for tree in found.by_tree:
        key = (tree[0].uuid, shape)
        cached = trees.get(key)
        if cached is None or cached[0] is not tree:
            cached = trees[key] = (tree, {
                s.uuid: _encoded_summary(encoded, s, shape, requested, want) for s in tree})
        result.update(cached[1])
    return result


def _encoded_summary(encoded: dict, s: service.ProviderSummary, shape: tuple,
                     requested: frozenset[str] | None,
                     want: tuple[int, int]) -> dict | orjson.Fragment:
    if not s.revision:
        return _summary_body(s, requested, want)
    key = (s.uuid, shape)
    cached = encoded.get(key)
    if cached is not None and cached[0] == s.revision:
        return cached[1]
    fragment = rendering.fragment(_summary_body(s, requested, want))
    encoded[key] = (s.revision, fragment)
    return fragment


def _summaries_entries(tree: tuple, want: tuple[int, int]) -> bytes:
    """A tree's summaries as entries of ``provider_summaries``
    (``,"uuid":{...}`` each, a comma first), from 1.29."""
    return b"," + orjson.dumps({s.uuid: _summary_body(s, None, want) for s in tree})[1:-1]


@functools.lru_cache(maxsize=64)
def _encoders(want: tuple[int, int]) -> candidate_rounds.Encoders:
    """How an answer kept tree by tree is written at ``want`` (from 1.29):
    every piece with the comma that goes before it in a list, so that the
    answer is its pieces joined at once (the first loses its comma)."""
    return candidate_rounds.Encoders(
        candidate=lambda cand: b"," + orjson.dumps(_allocation_request(cand, want)),
        tree=lambda tree: _summaries_entries(tree, want),
        shape=(want >= _MAPPINGS,))


def _body(encoded: candidate_rounds.Assembled) -> bytes:
    """What orjson writes for the answer's two keys, from their pieces,
    joined at once (each join of a big answer is a fresh copy of it)."""
    pieces = [b'{"allocation_requests":[']
    _listed(pieces, encoded.requests)
    pieces.append(b'],"provider_summaries":{')
    _listed(pieces, encoded.summaries)
    pieces.append(b"}}")
    return b"".join(pieces)


def _listed(pieces: list[bytes], items: list[bytes]) -> None:
    """``items`` (each with its comma first) onto ``pieces`` as the
    elements of a list: the first without its comma."""
    if items:
        pieces.append(items[0][1:])
        pieces.extend(itertools.islice(items, 1, None))


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
        else:
            wanted = request = _parse(query.frozen_pairs(req), want)
        placement = self.conf.placement
        found = service.find(
            self.replica, wanted,
            max_candidates=placement.max_allocation_candidates,
            strategy=placement.allocation_candidates_generation_strategy,
            randomize=placement.randomize_allocation_candidates,
            explain_limit=explain_limit, packed=want >= _MAPPINGS,
            encoders=_encoders(want) if want >= _SUMMARY_TREE else None)
        if found.encoded is not None:
            telemetry.metrics().candidates.observe(len(found.encoded.requests))
            rendering.send_encoded(req, resp, _body(found.encoded))
            return
        telemetry.metrics().candidates.observe(
            sum(c.count if isinstance(c, Packed) else 1 for c in found.candidates))
        # One section per shape of allocation request.
        encoded = ({} if found.cache is None else found.cache.section(
            ("encoded-request", want >= _DICT_REQUESTS, want >= _MAPPINGS)))
        body = {
            "allocation_requests": [_encoded_request(c, want, encoded)
                                    for c in found.candidates],
            "provider_summaries": _encoded_summaries(found, request, want),
        }
        if found.explanation is not None:
            body["explanation"] = found.explanation.as_dict()
        if headroom:
            body["headroom"] = headroom_service.compute(self.replica, wanted).as_dict()
        rendering.send_json(req, resp, body)
