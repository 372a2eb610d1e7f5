"""The indexes a live snapshot keeps up as its positions change.

:class:`~allotment.engine.live.LiveSnapshot` changes one position at a
time; every index the search reads (the members of each resource class and
aggregate, the roots' trait sets, each tree's roots and depths) must follow
each change exactly as :meth:`Snapshot.build` would have made it.  Kept
here, apart from the changes themselves.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping
from typing import Any


class IndexUpkeep:
    """Index upkeep for a live snapshot (whose slots it reads and writes)."""

    __slots__ = ()

    # The live snapshot's own slots, as this class uses them.
    _lazy: Any
    _root_traits: dict
    aggregates: list
    depth: list
    inventory: list
    parent: list
    root: list
    traits: list

    def _count_root(self, r: int, step: int) -> None:
        counts = self._root_traits
        traits = self.traits[r]
        n = counts.get(traits, 0) + step
        if n:
            counts[traits] = n
        else:
            del counts[traits]

    def _set_inventory(self, i: int, inventory: Mapping[str, tuple]) -> None:
        old = self.inventory[i] or {}
        by_rc = self._lazy.by_rc
        for rc in old.keys() - inventory.keys():
            members = by_rc[rc]
            k = bisect_left(members, i)
            if k < len(members) and members[k] == i:
                del members[k]
            if not members:
                del by_rc[rc]
        for rc in inventory.keys() - old.keys():
            insort(by_rc.setdefault(rc, []), i)
        self.inventory[i] = inventory

    def _set_aggregates(self, i: int, aggs: frozenset[str]) -> None:
        old = self.aggregates[i]
        if old == aggs:
            return
        members = self._lazy.agg_members
        for a in old - aggs:
            m = members.get(a)
            if m is not None:
                m.discard(i)
                if not m:
                    del members[a]
        for a in aggs - old:
            members.setdefault(a, set()).add(i)
        self.aggregates[i] = aggs

    def _place_in_trees(self, nodes: list[int]) -> None:
        """Root and depth of ``nodes`` (whole trees) from their parents."""
        parent, root, depth = self.parent, self.root, self.depth
        done: set[int] = set()
        for i in nodes:
            chain = []
            node = i
            while node not in done and parent[node] != -1:
                chain.append(node)
                node = parent[node]
                if len(chain) > len(nodes):
                    raise ValueError("provider parent cycle detected")
            if node not in done:
                root[node], depth[node] = node, 0
                done.add(node)
            for k in reversed(chain):
                root[k] = root[parent[k]]
                depth[k] = depth[parent[k]] + 1
                done.add(k)
