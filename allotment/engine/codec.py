"""What the engine is given to keep answers encoded, without knowing how.

Answers asked for again and again are kept as the bytes the API writes for
them (a tree's whole answer packed, see engine.packed; a limited answer's
candidates and summaries tree by tree).  The engine holds those bytes and
counts them; what they say is written by the API's codec
(``allotment.api.candidates_codec``), which the composition root gives the
world once.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from allotment.engine.packed import Packer
from allotment.engine.plan import Candidate


class Encoder(Protocol):
    """One shape of answer (a microversion's): how one candidate's
    allocation request, and one tree's provider summaries, stand in it,
    each with whatever separator goes before it.  ``shape`` names what they
    write, so that answers of another shape are kept apart."""

    shape: Hashable

    def candidate(self, cand: Candidate) -> bytes:
        """The allocation request of ``cand``."""

    def tree(self, summaries: tuple) -> bytes:
        """A tree's provider summaries (its members' ``ProviderSummary``
        in UUID order)."""


class Codec(Packer, Protocol):
    """Everything the engine keeps encoded is made by one of these."""

    def encoder(self, shape: Hashable) -> Encoder:
        """The encoder of answers shaped as ``shape`` says (what the caller
        asked to have kept)."""
