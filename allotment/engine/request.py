"""The typed form of a ``GET /allocation_candidates`` query.

The API layer parses and validates the query string into these objects; the
engine only ever sees well-formed requests.  Everything that changes the
*meaning* of a request between microversions is carried here explicitly
(``nested_aware``); things that only change how results are rendered
(mappings from 1.34, summaries' extra fields) are left to the renderer,
which can read ``microversion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

GROUP_POLICIES = ("none", "isolate")

# Microversion from which candidates may combine several providers of one tree.
NESTED_AWARE_VERSION = (1, 29)


@dataclass(frozen=True)
class SearchGroup:
    """One request group as the search takes it: ``resources[$S]``,
    ``required[$S]``, ... (the client's ``RequestGroup`` is what a caller
    builds; this is what the API parsed it into).

    The unsuffixed group (``suffix == ""``) may be spread over the providers
    of one tree plus sharing providers serving that tree; a suffixed group must
    be satisfied entirely by a single provider.
    """

    suffix: str = ""
    resources: Mapping[str, int] = field(default_factory=dict)
    # Each inner set is "any of these"; the outer tuple is "all of these".
    required_traits: tuple[frozenset[str], ...] = ()
    forbidden_traits: frozenset[str] = frozenset()
    # Same shape as required_traits, over aggregate UUIDs.
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggs: frozenset[str] = frozenset()
    in_tree: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "resources", MappingProxyType(dict(self.resources)))
        object.__setattr__(
            self, "required_traits",
            tuple(frozenset(s) for s in self.required_traits))
        object.__setattr__(
            self, "member_of", tuple(frozenset(s) for s in self.member_of))
        object.__setattr__(
            self, "forbidden_traits", frozenset(self.forbidden_traits))
        object.__setattr__(
            self, "forbidden_aggs", frozenset(self.forbidden_aggs))
        for rc, amount in self.resources.items():
            if not isinstance(amount, int) or amount < 1:
                raise ValueError(f"amount of {rc} must be a positive integer")

    @property
    def resourceless(self) -> bool:
        return not self.resources


@dataclass(frozen=True)
class AllocationCandidatesRequest:
    """Request groups plus the parameters that apply to the request as a whole."""

    groups: tuple[SearchGroup, ...]
    group_policy: str | None = None
    # Each entry is one ``same_subtree`` parameter: a set of group suffixes.
    same_subtrees: tuple[frozenset[str], ...] = ()
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    limit: int | None = None
    # Before 1.29 a candidate may use at most one provider per tree.
    nested_aware: bool = True
    microversion: tuple[int, int] = (1, 39)

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        object.__setattr__(
            self, "same_subtrees",
            tuple(frozenset(s) for s in self.same_subtrees))
        object.__setattr__(self, "root_required", frozenset(self.root_required))
        object.__setattr__(
            self, "root_forbidden", frozenset(self.root_forbidden))
        suffixes = [g.suffix for g in self.groups]
        if len(set(suffixes)) != len(suffixes):
            raise ValueError("request group suffixes must be unique")
        if self.group_policy not in (None, *GROUP_POLICIES):
            raise ValueError(f"unknown group_policy {self.group_policy!r}")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")
        known = set(suffixes)
        for subtree in self.same_subtrees:
            if not subtree <= known or "" in subtree:
                raise ValueError(
                    "same_subtree must name suffixed groups of the request")

    @classmethod
    def for_microversion(
        cls, microversion: tuple[int, int], **kwargs: object
    ) -> AllocationCandidatesRequest:
        """Build a request whose version-dependent semantics follow ``microversion``."""
        return cls(
            microversion=microversion,
            nested_aware=microversion >= NESTED_AWARE_VERSION,
            **kwargs,  # type: ignore[arg-type]
        )

    def group(self, suffix: str) -> SearchGroup | None:
        for g in self.groups:
            if g.suffix == suffix:
                return g
        return None

    @property
    def isolate(self) -> bool:
        return self.group_policy == "isolate"

    @property
    def include_mappings(self) -> bool:
        return self.microversion >= (1, 34)
