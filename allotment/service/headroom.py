"""How many more instances of a request fit (engine.headroom), from the
process's world, with the names renderers show."""

from __future__ import annotations

from dataclasses import dataclass

from allotment.engine import headroom as engine
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.world.sync import Replica


@dataclass(frozen=True)
class HostCount:
    uuid: str
    name: str
    count: int


@dataclass(frozen=True)
class Headroom:
    total: int
    hosts: list[HostCount]  # by name
    aggregates: dict[str, int]
    largest: dict[str, int]

    def as_dict(self) -> dict:
        return {"total": self.total,
                "hosts": [{"uuid": h.uuid, "name": h.name, "count": h.count}
                          for h in self.hosts],
                "aggregates": dict(sorted(self.aggregates.items())),
                "largest": dict(sorted(self.largest.items()))}


def compute(replica: Replica, request: AllocationCandidatesRequest | ExtendedRequest,
            ) -> Headroom:
    with replica.current() as world:
        return of_world(world, request)


def of_world(world, request: AllocationCandidatesRequest | ExtendedRequest,
             largest: dict[str, int] | None = None) -> Headroom:
    """:func:`compute` over a world the caller already holds.  Each tree's
    answer is kept in the world until the tree changes, per request."""
    snap = world.snapshot
    # Requests hold mappings (not hashable): their text names their kind.
    memo = world.memo(("headroom", repr(request)))
    found = engine.count(snap, request, memo=memo, with_largest=largest is None)
    if largest is not None:
        found.largest = largest
    hosts = sorted((HostCount(uuid, snap.name_of(snap.index[uuid]), n)
                    for uuid, n in found.per_host.items()), key=lambda h: (h.name, h.uuid))
    return Headroom(found.total, hosts, found.per_aggregate, found.largest)


def compute_many(replica: Replica, requests: dict[str, AllocationCandidatesRequest],
                 ) -> dict[str, Headroom]:
    """Several named requests (flavors) against one state of the world."""
    with replica.current() as world:
        largest = engine.largest(world.snapshot)
        return {name: of_world(world, req, largest) for name, req in requests.items()}
