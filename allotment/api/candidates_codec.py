"""The JSON of GET /allocation_candidates, written here and nowhere else.

Allocation requests and provider summaries have one shape per
microversion, written once each below.  What is kept encoded between
requests is written here too: the :class:`Codec` the composition root
gives the world once (``allotment.server.app``) packs a tree's whole
answer (engine.packed) and encodes the pieces of answers kept tree by tree
(engine.codec); the engine only holds the bytes.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from collections.abc import Sequence

import orjson

from allotment.api import rendering
from allotment.engine.answer import Answer
from allotment.engine.packed import Packed
from allotment.engine.search import Candidate
from allotment.engine.whatif import WhatIf

# Where the response grows, by microversion.
DICT_REQUESTS = (1, 12)
SUMMARY_TRAITS = (1, 17)
SUMMARY_ALL_CLASSES = (1, 27)
SUMMARY_TREE = (1, 29)
MAPPINGS = (1, 34)

# Level 3 compresses a tree's candidates as fast as level 1 (about 85 us for
# 56 candidates) and a tenth smaller; levels from 6 on take twice as long.
_LEVEL = 3


def allocation_request(cand: Candidate, want: tuple[int, int]) -> dict:
    if want < DICT_REQUESTS:
        # The body of PUT /allocations/{consumer} before 1.12.
        return {"allocations": [
            {"resource_provider": {"uuid": uuid}, "resources": dict(resources)}
            for uuid, resources in cand.allocations.items()]}
    # The engine's dicts and lists go to the encoder as they are (it only
    # reads them): a big answer is mostly these, one per candidate.
    body: dict = {"allocations": {
        uuid: {"resources": resources} for uuid, resources in cand.allocations.items()}}
    if want >= MAPPINGS:
        body["mappings"] = cand.mappings
    return body


def summary_body(s, requested: frozenset[str] | None, want: tuple[int, int]) -> dict:
    """One provider's entry of ``provider_summaries`` (``s``: a
    engine.summaries.ProviderSummary); ``requested``: the classes shown, None for all."""
    body: dict = {"resources": {
        rc: {"capacity": capacity, "used": used}
        for rc, (capacity, used) in s.resources.items()
        if requested is None or rc in requested}}
    if want >= SUMMARY_TRAITS:
        body["traits"] = list(s.traits)
    if want >= SUMMARY_TREE:
        body["parent_provider_uuid"] = s.parent_uuid
        body["root_provider_uuid"] = s.root_uuid
    return body


class _Encoder:
    """How an answer kept tree by tree is written at ``want`` (from 1.29):
    every piece with the comma that goes before it in a list, so that the
    answer is its pieces joined at once (the first loses its comma)."""

    __slots__ = ("_want", "shape")

    def __init__(self, want: tuple[int, int]) -> None:
        self._want = want
        self.shape = (want >= MAPPINGS,)

    def candidate(self, cand: Candidate) -> bytes:
        return b"," + orjson.dumps(allocation_request(cand, self._want))

    def tree(self, summaries: tuple) -> bytes:
        """A tree's summaries as entries of ``provider_summaries``
        (``,"uuid":{...}`` each, a comma first)."""
        want = self._want
        return b"," + rendering.dumps({s.uuid: summary_body(s, None, want)
                                       for s in summaries})[1:-1]


class Codec:
    """What the world is given to keep answers encoded (engine.codec.Codec)."""

    def pack(self, candidates: Sequence[Candidate]) -> bytes:
        """A tree's candidates as their allocation requests are rendered
        from 1.34 on, joined by commas (orjson's list without its
        brackets), compressed."""
        return zlib.compress(
            orjson.dumps([allocation_request(c, MAPPINGS) for c in candidates])[1:-1], _LEVEL)

    def unpack(self, packed: Packed) -> bytes:
        """The allocation requests of a packed tree, encoded and joined by commas."""
        return zlib.decompress(packed.data)

    def candidates(self, packed: Packed) -> list[Candidate]:
        """The candidates of a packed tree again, one by one."""
        return [Candidate({u: a["resources"] for u, a in body["allocations"].items()},
                          body["mappings"], packed.anchor)
                for body in orjson.loads(b"[" + self.unpack(packed) + b"]")]

    def encoder(self, want: tuple[int, int]) -> _Encoder:
        return _encoder(want)


@functools.lru_cache(maxsize=64)
def _encoder(want: tuple[int, int]) -> _Encoder:
    return _Encoder(want)


CODEC = Codec()


# ---------------------------------------------------------------------------
# The answer


def encoded_request(cand: Candidate | Packed, want: tuple[int, int],
                    encoded: dict) -> dict | orjson.Fragment:
    """The allocation request of ``cand``; encoded once for a candidate the
    engine hands out again (a host that did not change since the last such
    request), and kept in ``encoded`` (the section of the world's cache for
    this shape of request) for as long as the engine keeps it.  A packed
    tree (asked for from 1.34 only, whose rendering it holds) is all of its
    tree's allocation requests, joined by commas: as one element of the
    list they come out as its elements."""
    if type(cand) is Packed:
        return orjson.Fragment(CODEC.unpack(cand))
    if not cand.reused:
        return allocation_request(cand, want)
    # By the object itself: the entry holds it, so its id is not reused
    # while the entry is there.
    kept = encoded.get(id(cand))
    if kept is not None and kept[0] is cand:
        return kept[1]
    fragment = rendering.fragment(allocation_request(cand, want))
    encoded[id(cand)] = (cand, fragment)
    return fragment


def answer_body(answer: Answer, want: tuple[int, int],
                requested: frozenset[str] | None) -> dict:
    """The answer's document at microversion ``want``, but for answers the
    engine hands over encoded (see :func:`assembled_body`);
    ``requested``: the classes summaries show, None for all."""
    # One section per shape of allocation request.
    encoded = ({} if answer.cache is None else answer.cache.section(
        ("encoded-request", want >= DICT_REQUESTS, want >= MAPPINGS)))
    body = {
        "allocation_requests": (
            [encoded_request(c, want, encoded) for c in answer.candidates]
            if answer.what_if is None else
            [what_if_request(c, note, want)
             for c, note in zip(answer.candidates, answer.what_if, strict=True)]),
        "provider_summaries": encoded_summaries(answer, requested, want),
    }
    if answer.explanation is not None:
        body["explanation"] = answer.explanation.as_dict()
    if answer.headroom is not None:
        body["headroom"] = answer.headroom.as_dict()
    return body


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


def shown_classes(requested: frozenset[str], want: tuple[int, int]) -> frozenset[str] | None:
    """The resource classes provider summaries show at ``want`` for a
    request of the classes ``requested``: before 1.27 those only; None for
    all."""
    return None if want >= SUMMARY_ALL_CLASSES else requested


def encoded_summaries(found: Answer, requested: frozenset[str] | None,
                      want: tuple[int, int]) -> dict:
    """Encoded summaries by provider (``requested``: the classes shown, see
    :func:`shown_classes`).  Each is kept, by (provider, what the
    microversion shows), with the summary revision it was made at: a
    provider's summary is the same from one request to the next until it
    changes, and most of a big answer is summaries.  From 1.29 whole
    trees' are kept too, with the tuple of summaries they were made from
    (the same tuple is handed out for as long as the tree stays as it
    is): a big answer from 1.29 is mostly trees unchanged since the
    last."""
    shape = (want >= SUMMARY_TRAITS, want >= SUMMARY_TREE, requested)
    if found.cache is None:
        return {s.uuid: summary_body(s, requested, want) for s in found.summaries}
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


def _encoded_summary(encoded: dict, s, shape: tuple, requested: frozenset[str] | None,
                     want: tuple[int, int]) -> dict | orjson.Fragment:
    if not s.revision:
        return summary_body(s, requested, want)
    key = (s.uuid, shape)
    cached = encoded.get(key)
    if cached is not None and cached[0] == s.revision:
        return cached[1]
    fragment = rendering.fragment(summary_body(s, requested, want))
    encoded[key] = (s.revision, fragment)
    return fragment


def assembled_body(requests: list[bytes], summaries: list[bytes]) -> bytes:
    """What orjson writes for the answer's two keys, from the pieces the
    encoder wrote (each with its comma first), joined at once (each join
    of a big answer is a fresh copy of it)."""
    pieces = [b'{"allocation_requests":[']
    _listed(pieces, requests)
    pieces.append(b'],"provider_summaries":{')
    _listed(pieces, summaries)
    pieces.append(b"}}")
    return b"".join(pieces)


def _listed(pieces: list[bytes], items: list[bytes]) -> None:
    """``items`` (each with its comma first) onto ``pieces`` as the
    elements of a list: the first without its comma."""
    if items:
        pieces.append(items[0][1:])
        pieces.extend(itertools.islice(items, 1, None))
