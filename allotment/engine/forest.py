"""Tree arithmetic over parent arrays (``parent[i]``, -1 for a root)."""

from __future__ import annotations

from collections.abc import Iterable
from operator import add
from typing import Any


def roots_and_depths(parent: list[int]) -> tuple[list[int], list[int]]:
    """Root and depth of every provider, by pointer jumping.

    Each pass doubles how far every provider looks up its parent chain, so a
    forest of depth d takes about log2(d) passes of whole-list operations.
    """
    n = len(parent)
    up = [i if p == -1 else p for i, p in enumerate(parent)]
    dist = [0 if p == -1 else 1 for p in parent]
    for _ in range(n.bit_length() + 1):
        further = list(map(up.__getitem__, up))
        if further == up:
            break
        dist = list(map(add, dist, map(dist.__getitem__, up)))
        up = further
    if any(parent[r] != -1 for r in up):
        raise ValueError("provider parent cycle detected")
    return up, dist


def lca(snap: Any, nodes: Iterable[int]) -> int | None:
    parent, depth, root = snap.parent, snap.depth, snap.root
    it = iter(nodes)
    a = next(it)
    for b in it:
        if root[a] != root[b]:
            return None
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
    return a
