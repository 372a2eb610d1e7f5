"""How many more instances of a request fit (engine.headroom), from the
process's world, with the names renderers show."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from allotment.engine import headroom as engine
from allotment.engine import whatif
from allotment.engine.answer import preemptible_world
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.request import AllocationCandidatesRequest
from allotment.world.sync import Replica


class HostCount(NamedTuple):
    # A tuple: a flavor's count at 10,000 hosts makes 10,000 of them.
    uuid: str
    name: str
    count: int


@dataclass(frozen=True)
class Headroom:
    total: int
    hosts: list[HostCount]  # by name
    aggregates: dict[str, int]
    largest: dict[str, int]
    # With preempt=true: the same counted with every preemptible consumer gone.
    with_preemption: Headroom | None = None

    def as_dict(self) -> dict:
        body = {"total": self.total,
                "hosts": [{"uuid": h.uuid, "name": h.name, "count": h.count}
                          for h in self.hosts],
                "aggregates": dict(sorted(self.aggregates.items())),
                "largest": dict(sorted(self.largest.items()))}
        if self.with_preemption is not None:
            body["with_preemption"] = self.with_preemption.as_dict()
        return body


def compute(replica: Replica, request: AllocationCandidatesRequest | ExtendedRequest,
            ) -> Headroom:
    with replica.current() as world:
        return of_world(world, request)


def _trees(world) -> engine.Trees:
    """The trees at the world's current state (engine.headroom_trees),
    worked out once per state for every request and kept in the world."""
    kept = world.memo("headroom_trees")
    trees = kept.get("trees")
    if trees is None or not trees.unchanged(world.snapshot):
        trees = kept["trees"] = engine.Trees(world.snapshot, trees)
    return trees


def of_world(world, request: AllocationCandidatesRequest | ExtendedRequest,
             *, with_hosts: bool = True) -> Headroom:
    """:func:`compute` over a world the caller already holds.  The count is
    kept in the world, per request, and moved to the next state of the
    world by counting again only the trees that changed.  ``with_hosts``
    false leaves ``hosts`` empty (naming every host costs)."""
    snap = world.snapshot
    if isinstance(request, ExtendedRequest) and request.is_what_if:
        # Counted in the world without the ignored consumers, made for
        # this request and kept nowhere; with preemption, counted again
        # without every preemptible consumer as well.
        if request.ignored:
            snap = whatif.without(snap, request.ignored)
        plain = dataclasses.replace(request, ignored=(), preemptible=None)
        counted = _counted(snap, engine.count(snap, plain), with_hosts)
        if request.preemptible is None:
            return counted
        wide, _, _ = preemptible_world(world, request, snap)
        return dataclasses.replace(
            counted, with_preemption=_counted(wide, engine.count(wide, plain), with_hosts))
    # Requests hold mappings (not hashable): their text names their kind.
    memo = world.memo(("headroom", repr(request)))
    found = engine.count(snap, request, memo=memo, trees=_trees(world))
    return _counted(snap, found, with_hosts)


def _counted(snap, found: engine.Headroom, with_hosts: bool) -> Headroom:
    hosts = []
    if with_hosts:
        name_of, index = snap.name_of, snap.index
        hosts = sorted((HostCount(uuid, name_of(index[uuid]), n)
                        for uuid, n in found.per_host.items()), key=lambda h: (h.name, h.uuid))
    return Headroom(found.total, hosts, found.per_aggregate, found.largest)


def compute_many(replica: Replica, requests: dict[str, AllocationCandidatesRequest],
                 *, with_hosts: bool = True) -> dict[str, Headroom]:
    """Several named requests (flavors) against one state of the world."""
    with replica.current() as world:
        return {name: of_world(world, req, with_hosts=with_hosts)
                for name, req in requests.items()}
