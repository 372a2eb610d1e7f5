"""A tree's whole answer kept packed: opaque bytes, counted by size.

A request without a limit wants every candidate of every tree.  Kept one
by one (allocations, mappings and the encoded allocation request of each)
a candidate of a few providers takes 1-2 KB, so the answer of a world with
many candidates per tree (1,000 hosts of eight devices, two isolated
groups: 56 per tree, 56,000 in all) is several times the world's own size
and does not fit the budget of kept answers: every such request searched
most of every tree again.  Packed, a tree's candidates are one string of
bytes made by the :class:`Packer` the caller gives (the API's codec, which
writes them as it renders them and compresses them): the 56 candidates of
such a tree take about 1 KB instead of 100 KB, and a request hands the
whole string to the renderer instead of 56 candidates, each built, handed
through the search's generators and encoded again.  What the bytes say is
the packer's business: the engine only keeps them and counts their size.
"""

from __future__ import annotations

from collections.abc import Iterable

from allotment.engine.plan import Candidate, Packer

__all__ = ["BYTES_PER_RESULT", "PACKED", "Packed", "Packer"]

# A tree's results handed out as one packed answer (see
# engine.search._dedupe), in the place of the tree's candidates.
PACKED = object()

# A packed answer is counted against the budget of kept answers (counted in
# kept results) as the results its bytes would fill at about what one kept
# result takes (0.5-2 KB).
BYTES_PER_RESULT = 1024


class Packed:
    """The candidates of one tree, packed."""

    __slots__ = ("anchor", "count", "data", "providers")

    def __init__(self, anchor: str, candidates: Iterable[Candidate], packer: Packer) -> None:
        cands = list(candidates)
        self.anchor = anchor
        self.count = len(cands)
        # Every provider an allocation request names (for provider_summaries).
        self.providers = frozenset(u for c in cands for u in c.allocations)
        self.data = packer.pack(cands)

    def size(self) -> int:
        """Bytes held."""
        return len(self.data)

    def results(self) -> int:
        """What the answer is counted as against the budget of kept answers."""
        return -(-self.size() // BYTES_PER_RESULT)
