"""The headroom as an answer states it: how many more instances of a
request fit (engine.headroom counts them), per host with its name, per
aggregate and in total, kept in the world between requests.

A what-if request (engine.whatif) is counted in the world it asks about,
made for it and kept nowhere; with preemption it is counted again in the
world without every preemptible consumer (``with_preemption``).  Any other
request's count is kept in the world's cache, per request, and moved to
the world's next state by counting again only the trees that changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from allotment.engine import headroom, whatif
from allotment.engine.extensions import ExtendedRequest
from allotment.engine.live import LiveSnapshot
from allotment.engine.request import AllocationCandidatesRequest


class HostCount(NamedTuple):
    # A tuple: a flavor's count at 10,000 hosts makes 10,000 of them.
    uuid: str
    name: str
    count: int


@dataclass(frozen=True)
class HeadroomAnswer:
    total: int
    hosts: list[HostCount]  # by name
    aggregates: dict[str, int]
    largest: dict[str, int]
    # With preempt=true: the same counted with every preemptible consumer gone.
    with_preemption: HeadroomAnswer | None = None

    def as_dict(self) -> dict:
        body = {"total": self.total,
                "hosts": [{"uuid": h.uuid, "name": h.name, "count": h.count}
                          for h in self.hosts],
                "aggregates": dict(sorted(self.aggregates.items())),
                "largest": dict(sorted(self.largest.items()))}
        if self.with_preemption is not None:
            body["with_preemption"] = self.with_preemption.as_dict()
        return body


class _Memo(Protocol):
    def section(self, kind: Hashable) -> dict: ...


class Source(Protocol):
    """The world counted in, held still meanwhile (engine.answer.Source)."""

    snapshot: LiveSnapshot
    cache: _Memo


def _trees(source: Source) -> headroom.Trees:
    """The trees at the world's current state (engine.headroom_trees),
    worked out once per state for every request and kept in the world."""
    kept = source.cache.section("headroom_trees")
    trees = kept.get("trees")
    if trees is None or not trees.unchanged(source.snapshot):
        trees = kept["trees"] = headroom.Trees(source.snapshot, trees)
    return trees


def headroom_of(source: Source, request: AllocationCandidatesRequest | ExtendedRequest,
                *, with_hosts: bool = True) -> HeadroomAnswer:
    """How many more instances of ``request`` fit in ``source``'s world.
    ``with_hosts`` false leaves ``hosts`` empty (naming every host costs)."""
    snap = source.snapshot
    if isinstance(request, ExtendedRequest) and request.is_what_if:
        if request.ignored:
            snap = whatif.without(snap, request.ignored)
        plain = dataclasses.replace(request, ignored=(), preemptible=None)
        counted = _counted(snap, headroom.count(snap, plain), with_hosts)
        if request.preemptible is None:
            return counted
        wide, _, _ = whatif.preemptible_world(
            source.snapshot, request.ignored, request.preemptible, snap)
        return dataclasses.replace(
            counted, with_preemption=_counted(wide, headroom.count(wide, plain), with_hosts))
    # Requests hold mappings (not hashable): their text names their kind.
    memo = source.cache.section(("headroom", repr(request)))
    found = headroom.count(snap, request, memo=memo, trees=_trees(source))
    return _counted(snap, found, with_hosts)


def _counted(snap: LiveSnapshot, found: headroom.Headroom, with_hosts: bool,
             ) -> HeadroomAnswer:
    hosts = []
    if with_hosts:
        name_of, index = snap.name_of, snap.index
        hosts = sorted((HostCount(uuid, name_of(index[uuid]), n)
                        for uuid, n in found.per_host.items()), key=lambda h: (h.name, h.uuid))
    return HeadroomAnswer(found.total, hosts, found.per_aggregate, found.largest)
