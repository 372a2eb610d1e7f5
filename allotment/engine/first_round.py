"""The first round of a limited answer kept tree by tree, a block of trees
at a time.

nova asks for a thousand candidates (``limit=1000``), and on a world of a
thousand hosts or more the first round of such an answer (engine.rounds:
the first candidate of every tree in turn) goes through a thousand kept
trees.  Taken a tree at a time, it touched three small objects a tree (the
kept row, the encoded candidate, the encoded summary) and the answer then
joined two thousand pieces: on a flat world about half of the answer's
time, most of it spent waiting for memory.  Here consecutive anchors are
kept in blocks of :data:`BLOCK` trees, each holding its trees' first
candidates joined into one piece, and the summaries of a block's trees are
kept joined into another (once for every kind of request: where the
trees' own summaries are kept), so the round is a few dozen pieces and so
is the join.

A block, or joined summaries, is dropped as soon as any of its trees is
touched (:func:`forget`, called where the trees' rows are dropped) and made
again from what is kept of the trees the next time the round walks it.
The round takes a block whole only where the answer takes all of it (the
limit left is a block or more, and the block lies within the walk);
elsewhere, at the ends of a rotated round and near the limit, trees are
taken one at a time.  The answer is the same either way: a block holds
exactly what its trees give one at a time.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

# Trees a block: large enough that a round over a thousand trees is a few
# dozen pieces, small enough that a claim makes one block again cheaply
# (from the other trees' kept rows) and that an answer near its limit
# walks few trees one at a time.
BLOCK = 32
# Where a section (root -> what is kept of its tree, see engine.rounds)
# keeps what it keeps joined; the sections' other special keys are None,
# -1 and -2.
_BLOCKS = -3


@dataclass(slots=True)
class Block:
    """What ``roots`` (consecutive anchors) give a first round."""

    roots: list[int]
    requests: bytes  # the first candidate of each tree that has one, joined
    given: list[int]  # the trees that have one, in order
    alive: list[int]  # trees with more to give in later rounds


@dataclass(slots=True)
class Summaries:
    """The summaries of ``roots`` (a block's trees with a candidate), joined."""

    roots: list[int]
    summaries: bytes


@dataclass(slots=True)
class _Kept:
    """Blocks (or joined summaries) by key, and the key each root's is
    under.  A root is in one kept item at most: keeping one drops any other
    its roots were in, so that dropping a root's item (:func:`forget`)
    leaves nothing kept that describes it."""

    at: dict[int, Block | Summaries] = field(default_factory=dict)
    of: dict[int, int] = field(default_factory=dict)

    def put(self, key: int, item: Block | Summaries) -> None:
        at, of = self.at, self.of
        for r in item.roots:
            old = of.get(r)
            if old is not None and old != key:
                at.pop(old, None)
            of[r] = key
        at[key] = item


def _kept(section: dict) -> _Kept:
    kept = section.get(_BLOCKS)
    if kept is None:
        kept = section[_BLOCKS] = _Kept()
    return kept


@dataclass(slots=True)
class Round:
    """An answer's first round: its pieces of encoded requests (each one or
    more allocation requests, as the encoder writes them), its pieces of
    encoded summaries with the anchor position each starts at, how many
    candidates, the trees with more to give, trees reused, and the last
    anchor walked to."""

    requests: list[bytes] = field(default_factory=list)
    summaries: list[tuple[int, bytes]] = field(default_factory=list)
    count: int = 0
    alive: list[int] = field(default_factory=list)
    reused: int = 0
    walked: int | None = None

    def summaries_in_order(self) -> list[bytes]:
        """The summary pieces in anchor (UUID) order."""
        return [piece for _, piece in sorted(self.summaries, key=operator.itemgetter(0))]


def take(anchors: list[int], at: int, rows: dict, row: Callable[[int], list],
         trees: dict, summary: Callable[[int], bytes], limit: int) -> Round:
    """The first round over ``anchors`` from position ``at`` round to the one
    before it: each tree's first candidate (``rows[root]`` as kept, else
    ``row(root)``, kept), up to ``limit`` candidates, with the summary of
    each tree that gave one (``summary(root)``; joined ones kept in
    ``trees``, the section the trees' summaries are kept in, shared by
    every kind of request: one copy of them)."""
    blocks, joined = _kept(rows), _kept(trees)
    out = Round()

    def one(p: int) -> bool:
        # Position p alone; whether the limit is reached.
        r = anchors[p]
        tree = _tree(rows, r, row, out)
        found = tree[0]
        if found:
            if _more(tree):
                out.alive.append(r)
            out.requests.append(found[0])
            out.summaries.append((p, summary(r)))
            out.count += 1
            if out.count == limit:
                out.walked = r
                return True
        return False

    n = len(anchors)
    for lo, hi in ((at, n), (0, at)):
        p = lo
        while p < hi:
            if p % BLOCK or p + BLOCK > hi or limit - out.count < BLOCK:
                if one(p):
                    return out
                p += 1
                continue
            block = _block(blocks, anchors, p, rows, row, out)
            if block.given:
                out.requests.append(block.requests)
                out.summaries.append((p, _summaries(joined, block.given, summary)))
                out.count += len(block.given)
                out.alive.extend(block.alive)
                if out.count == limit:
                    out.walked = block.given[-1]
                    return out
            p += BLOCK
    out.walked = anchors[at - 1] if n else None
    return out


def _block(kept: _Kept, anchors: list[int], p: int, rows: dict, row: Callable[[int], list],
           out: Round) -> Block:
    """The block of the anchors from position ``p``, as kept or made now."""
    roots = anchors[p:p + BLOCK]
    block = kept.at.get(p)
    # Anchors are the snapshot's own int objects: comparing the lists
    # compares pointers.
    if type(block) is Block and block.roots == roots:
        out.reused += BLOCK
        return block
    firsts: list[bytes] = []
    given: list[int] = []
    alive: list[int] = []
    for r in roots:
        tree = _tree(rows, r, row, out)
        found = tree[0]
        if found:
            if _more(tree):
                alive.append(r)
            firsts.append(found[0])
            given.append(r)
    block = Block(roots, b"".join(firsts), given, alive)
    kept.put(p, block)
    return block


def _tree(rows: dict, r: int, row: Callable[[int], list], out: Round) -> list:
    """What is kept of tree ``r`` (made now if nothing is)."""
    tree = rows.get(r)
    if tree is None:
        tree = rows[r] = row(r)
    else:
        out.reused += 1
    return tree


def _more(tree: list) -> bool:
    """Whether a tree takes part in later rounds: it has more than one
    candidate, or may have."""
    return tree[1] or len(tree[0]) > 1


def _summaries(kept: _Kept, given: list[int], summary: Callable[[int], bytes]) -> bytes:
    """The summaries of ``given`` joined, as kept or joined now."""
    item = kept.at.get(given[0])
    if type(item) is Summaries and item.roots == given:
        return item.summaries
    item = Summaries(given, b"".join(map(summary, given)))
    kept.put(given[0], item)
    return item.summaries


def forget(section: dict, touched: list[int]) -> None:
    """Drop what ``section`` keeps joined (blocks, or joined summaries) of
    any of ``touched`` (roots, and positions no longer roots: the caller
    passes both)."""
    kept: _Kept | None = section.get(_BLOCKS)
    if kept is None or not kept.at:
        return
    pop_of, pop_at = kept.of.pop, kept.at.pop
    for i in touched:
        p = pop_of(i, None)
        if p is not None:
            pop_at(p, None)


def prune(section: dict) -> None:
    """Drop the blocks (or joined summaries) of trees ``section`` no longer
    keeps (a rotating answer drops trees its start has passed): what they
    hold stays within what the section holds tree by tree."""
    kept: _Kept | None = section.get(_BLOCKS)
    if kept is None:
        return
    for key in [key for key, item in kept.at.items() if item.roots[0] not in section]:
        del kept.at[key]
