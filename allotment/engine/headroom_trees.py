"""What headroom counts keep between one state of a changing snapshot and
the next, so that a scrape of many flavors does again only what changed.

:class:`Trees` is worked out once per state of the snapshot, for every
request: each tree's stamp (the revisions of its providers and of the
sharing providers serving it, as engine.kept stamps them), the trees linked
through sharing providers, and for every other tree a *signature*: its
providers in UUID order with their parent, inventory, usage and traits.
Two trees with the same signature answer every request alike up to their
providers' names (their candidates correspond one to one, in the same
allocation order), so they fit the same number of instances: a request is
counted once per signature, not once per tree.

:class:`Counts` is one request's count at one state: each tree's answer and
the sums made of them (per host, in total, per aggregate).  At the next
state only the trees whose stamp changed are counted again and the sums
moved by the difference; trees linked through sharing providers are placed
together again per group of linked trees that holds a changed one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from allotment.engine.snapshot import Snapshot

_VERSIONS = itertools.count(1)
_NONE: frozenset = frozenset()


def _stamp(revs: Sequence[int], members: tuple[int, ...] | None,
           pools: tuple[int, ...] | None, r: int) -> object:
    if members is None and pools is None:
        return revs[r]  # a tree of one provider, no pool: most hosts
    at = revs.__getitem__
    return (tuple(map(at, members or (r,))), tuple(map(at, pools or ())))


def _signature(snap: Snapshot, members: tuple[int, ...]) -> tuple[tuple, tuple]:
    """(shape, inventories, usage and traits in UUID order; the providers'
    aggregates), see the module docstring."""
    uuids, used, inventory, traits = snap.uuids, snap.used, snap.inventory, snap.traits
    if len(members) == 1:
        (r,) = members
        u = used.get(uuids[r])
        return (((-1, tuple((inventory[r] or {}).items()),
                  frozenset(u.items()) if u else _NONE, traits[r]),),
                (snap.aggregates[r],))
    at = {m: k for k, m in enumerate(members)}
    parent = snap.parent
    shape = []
    for m in members:
        u = used.get(uuids[m])
        shape.append((at.get(parent[m], -1), tuple((inventory[m] or {}).items()),
                      frozenset(u.items()) if u else _NONE, traits[m]))
    return tuple(shape), tuple(snap.aggregates[m] for m in members)


class Trees:
    """Everything about the trees that counts of any request need, at one
    state of the snapshot (see the module docstring)."""

    def __init__(self, snap: Snapshot, previous: Trees | None = None) -> None:
        self.snap = snap
        self.version = next(_VERSIONS)
        revs = snap.position_revisions()
        # None: a snapshot that never changes; nothing is compared or kept.
        self.revs = None if revs is None else list(revs)
        self.roots = list(snap.roots)
        if previous is not None and (previous.snap is not snap or revs is None):
            previous = None
        # Roots whose stamp changed since ``previous`` (None: not known).
        self.changed: set[int] | None = None
        self.after = previous.version if previous is not None else None
        many, served = snap.trees_of_many().get, snap.sharing_by_anchor.get
        self.stamps: dict[int, object] = {}
        if revs is not None:
            self.stamps = {r: _stamp(revs, many(r), served(r), r) for r in self.roots}
        sharing_roots = {snap.root[s] for s in snap.sharing}
        # Roots whose tree holds a sharing provider or is served by one.
        self.shares = frozenset(sharing_roots.union(snap.sharing_by_anchor))
        self.component_of = self._components(sharing_roots)
        self.signatures: dict[int, tuple[tuple, tuple]] = {}
        self.aggregates: dict[int, frozenset[str]] = {}
        todo: Sequence[int] = self.roots
        if previous is not None:
            old = previous.stamps
            new = self.stamps
            self.changed = {r for r, s in new.items() if old.get(r) != s}
            self.changed.update(r for r in old if r not in new)
            self.signatures = {r: s for r, s in previous.signatures.items()
                               if r in new and r not in self.changed and r not in self.shares}
            self.aggregates = {r: a for r, a in previous.aggregates.items()
                               if r in new and r not in self.changed}
            todo = [r for r in self.roots
                    if r in self.changed or r not in self.aggregates
                    or (r not in self.shares and r not in self.signatures)]
        aggregates = snap.aggregates
        for r in todo:
            members = many(r)
            if r not in self.shares:
                self.signatures[r] = _signature(snap, members or (r,))
            self.aggregates[r] = (aggregates[r] if members is None
                                  else frozenset().union(*map(aggregates.__getitem__, members)))
        self._largest: dict[str, int] | None = None

    def unchanged(self, snap: Snapshot) -> bool:
        """Whether ``snap`` is still in the state these trees were worked out at."""
        revs = snap.position_revisions()
        return (snap is self.snap and revs is not None and revs == self.revs
                and snap.roots == self.roots)

    def _components(self, sharing_roots: set[int]) -> dict[int, tuple[int, ...]]:
        """Root -> the trees linked with it through sharing providers (for
        the roots in ``shares``).  Trees in different groups use no
        provider in common, so placing them together is placing each group
        on its own."""
        snap = self.snap
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        sharing_in: dict[int, list[int]] = {}
        for s in snap.sharing:
            sharing_in.setdefault(snap.root[s], []).append(s)
        served = snap.sharing_by_anchor
        for r in self.shares:
            find(r)
            # Sharing providers (as negative nodes) join the trees they serve
            # and the tree they are in.
            for s in (*served.get(r, ()), *sharing_in.get(r, ())):
                parent[find(r)] = find(-1 - s)
        groups: dict[int, list[int]] = {}
        for r in self.shares:
            groups.setdefault(find(r), []).append(r)
        out = {}
        for members in groups.values():
            key = tuple(sorted(members))
            for r in members:
                out[r] = key
        return out

    def largest(self, work: Callable[[Snapshot], dict[str, int]]) -> dict[str, int]:
        if self._largest is None:
            self._largest = work(self.snap)
        return dict(self._largest)


@dataclass(slots=True)
class Answer:
    """One tree's count for one request."""

    uuid: str
    count: int
    aggregates: frozenset[str]
    shares: bool
    # The candidates (as totals) of a tree linked through sharing providers,
    # placed again with the others of its group.
    found: list | None
