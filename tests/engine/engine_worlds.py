"""Small helpers to describe provider worlds and requests by name.

Imported by the engine tests as a plain module (the directory is not a
package), hence the distinctive name.
"""

from __future__ import annotations

import uuid

from allotment.engine import (
    SHARES_TRAIT,
    AllocationCandidatesRequest,
    Inventory,
    ProviderRecord,
    SearchGroup,
    Snapshot,
    find_candidates,
)

_NS = uuid.UUID("6c1b3f0e-5d7e-4e55-9b0a-3f1f0f3d2a10")


def uid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


class World:
    """Declare providers by name; ``snapshot()`` freezes them."""

    def __init__(self) -> None:
        self.records: list[ProviderRecord] = []
        self.names: dict[str, str] = {}

    def add(self, name: str, *, parent: str | None = None,
            inv: dict | None = None, traits=(), aggs=(),
            sharing: bool = False) -> str:
        inventories = {}
        for rc, spec in (inv or {}).items():
            inventories[rc] = spec if isinstance(spec, Inventory) else Inventory(total=spec)
        traits = set(traits)
        if sharing:
            traits.add(SHARES_TRAIT)
        u = uid(name)
        self.names[u] = name
        self.records.append(ProviderRecord(
            uuid=u, name=name, parent_uuid=uid(parent) if parent else None,
            inventories=inventories, traits=frozenset(traits),
            aggregates=frozenset(uid(a) for a in aggs)))
        return u

    def snapshot(self) -> Snapshot:
        return Snapshot.build(self.records)

    def name(self, u: str) -> str:
        return self.names[u]

    def run(self, request: AllocationCandidatesRequest, **kwargs):
        return list(find_candidates(self.snapshot(), request, **kwargs))

    def shapes(self, request: AllocationCandidatesRequest, **kwargs) -> list:
        """Candidates as sets of (provider name, sorted resource classes)."""
        return [self.shape(c) for c in self.run(request, **kwargs)]

    def shape(self, cand) -> frozenset:
        return frozenset(
            (self.name(u), tuple(sorted(res)))
            for u, res in cand.allocations.items())

    def amounts(self, cand) -> frozenset:
        return frozenset(
            (self.name(u), rc, amt)
            for u, res in cand.allocations.items()
            for rc, amt in res.items())

    def mapping_names(self, cand) -> dict:
        return {s: sorted(self.name(u) for u in us)
                for s, us in cand.mappings.items()}


def group(suffix: str = "", *, required=(), forbidden=(), any_of=(),
          member_of=(), forbidden_aggs=(), in_tree: str | None = None,
          **resources: int) -> SearchGroup:
    """A request group; ``required`` traits are ANDed, ``any_of`` is a list
    of any-of trait sets, aggregates are given by name."""
    return SearchGroup(
        suffix=suffix,
        resources=resources,
        required_traits=tuple(frozenset([t]) for t in required)
        + tuple(frozenset(s) for s in any_of),
        forbidden_traits=frozenset(forbidden),
        member_of=tuple(frozenset(uid(a) for a in s) for s in member_of),
        forbidden_aggs=frozenset(uid(a) for a in forbidden_aggs),
        in_tree=uid(in_tree) if in_tree else None,
    )


def request(*groups: SearchGroup, version=(1, 39), **kwargs) -> AllocationCandidatesRequest:
    same = kwargs.pop("same_subtree", ())
    return AllocationCandidatesRequest.for_microversion(
        version, groups=groups,
        same_subtrees=tuple(frozenset(s) for s in same), **kwargs)


def cand(*parts: tuple[str, tuple[str, ...]]) -> frozenset:
    """Expected candidate: ``cand(("CN1", ("VCPU",)), ...)``."""
    return frozenset((n, tuple(sorted(rcs))) for n, rcs in parts)
