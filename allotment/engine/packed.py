"""A tree's whole answer kept packed: encoded, compressed, counted by size.

A request without a limit wants every candidate of every tree.  Kept one
by one (allocations, mappings and the encoded allocation request of each)
a candidate of a few providers takes 1-2 KB, so the answer of a world with
many candidates per tree (1,000 hosts of eight devices, two isolated
groups: 56 per tree, 56,000 in all) is several times the world's own size
and does not fit the budget of kept answers: every such request searched
most of every tree again.  Packed, a tree's candidates are one string of
their allocation requests as the API renders them from microversion 1.34
on, joined by commas, compressed: the 56 candidates of such a tree take
about 1 KB instead of 100 KB, and a request hands the whole string to the
renderer instead of 56 candidates, each built, handed through the search's
generators and encoded again.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import orjson

from allotment.engine.plan import Candidate

# A tree's results handed out as one packed answer (see
# engine.search._dedupe), in the place of the tree's candidates.
PACKED = object()

# Level 3 compresses a tree's candidates as fast as level 1 (about 85 us for
# 56 candidates) and a tenth smaller; levels from 6 on take twice as long.
_LEVEL = 3

# A packed answer is counted against the budget of kept answers (counted in
# kept results) as the results its bytes would fill at about what one kept
# result takes (0.5-2 KB).
BYTES_PER_RESULT = 1024


def request_body(cand: Candidate) -> dict:
    """The allocation request of ``cand`` as microversion 1.34 and later
    render it: a packed answer is these, encoded."""
    return {"allocations": {uuid: {"resources": resources}
                            for uuid, resources in cand.allocations.items()},
            "mappings": cand.mappings}


class Packed:
    """The candidates of one tree, packed."""

    __slots__ = ("_data", "anchor", "count", "providers")

    def __init__(self, anchor: str, candidates: Iterable[Candidate]) -> None:
        cands = list(candidates)
        self.anchor = anchor
        self.count = len(cands)
        # Every provider an allocation request names (for provider_summaries).
        self.providers = frozenset(u for c in cands for u in c.allocations)
        # orjson's list, without its brackets: the elements joined by commas.
        self._data = zlib.compress(
            orjson.dumps([request_body(c) for c in cands])[1:-1], _LEVEL)

    def encoded(self) -> bytes:
        """The allocation requests, encoded and joined by commas."""
        return zlib.decompress(self._data)

    def size(self) -> int:
        """Bytes held."""
        return len(self._data)

    def results(self) -> int:
        """What the answer is counted as against the budget of kept answers."""
        return -(-self.size() // BYTES_PER_RESULT)

    def candidates(self) -> list[Candidate]:
        """The candidates again (for a consumer that wants them one by one)."""
        return [Candidate({u: a["resources"] for u, a in body["allocations"].items()},
                          body["mappings"], self.anchor)
                for body in orjson.loads(b"[" + self.encoded() + b"]")]
