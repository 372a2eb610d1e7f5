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
candidates joined into one piece and their summaries into another, so the
round is a few dozen pieces and so is the join.

A block is dropped as soon as any of its trees is touched (:func:`forget`,
called where the trees' rows are dropped) and made again from the trees'
kept rows the next time the round walks it.  The round takes a block whole
only where the answer takes all of it (the limit left is a block or more,
and the block lies within the walk); elsewhere, at the ends of a rotated
round and near the limit, trees are taken one at a time.  The answer is
the same either way: a block holds exactly what its trees give one at a
time.
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
# Where a section of rows (root -> kept row, see engine.rounds) keeps its
# blocks; the section's other special keys are None, -1 and -2.
_BLOCKS = -3


@dataclass(slots=True)
class Block:
    """What ``roots`` (consecutive anchors) give a first round."""

    roots: list[int]
    requests: bytes  # the first candidate of each tree that has one, joined
    summaries: bytes  # those trees' summaries, joined, in the roots' order
    count: int  # trees with a candidate
    alive: list[int]  # trees with more to give in later rounds
    last: int | None  # the last tree with a candidate


@dataclass(slots=True)
class _Kept:
    at: dict[int, Block] = field(default_factory=dict)  # first position -> block
    of: dict[int, int] = field(default_factory=dict)  # root -> its block's first position


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
         summary: Callable[[int], bytes], limit: int) -> Round:
    """The first round over ``anchors`` from position ``at`` round to the one
    before it: each tree's first candidate (``rows[root]`` as kept, else
    ``row(root)``, kept), up to ``limit`` candidates, with the summary of
    each tree that gave one."""
    kept: _Kept | None = rows.get(_BLOCKS)
    if kept is None:
        kept = rows[_BLOCKS] = _Kept()
    out = Round()
    get = rows.get

    def one(p: int) -> bool:
        # Position p alone; whether the limit is reached.
        r = anchors[p]
        tree = get(r)
        if tree is None:
            tree = rows[r] = row(r)
        else:
            out.reused += 1
        found = tree[0]
        if found:
            if tree[1] or len(found) > 1:
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
            block = _block(kept, anchors, p, rows, row, summary, out)
            if block.count:
                out.requests.append(block.requests)
                out.summaries.append((p, block.summaries))
                out.count += block.count
                out.alive.extend(block.alive)
                if out.count == limit:
                    out.walked = block.last
                    return out
            p += BLOCK
    out.walked = anchors[at - 1] if n else None
    return out


def _block(kept: _Kept, anchors: list[int], p: int, rows: dict, row: Callable[[int], list],
           summary: Callable[[int], bytes], out: Round) -> Block:
    """The block of the anchors from position ``p``, as kept or made now."""
    roots = anchors[p:p + BLOCK]
    block = kept.at.get(p)
    # Anchors are the snapshot's own int objects: comparing the lists
    # compares pointers.
    if block is not None and block.roots == roots:
        out.reused += BLOCK
        return block
    firsts: list[bytes] = []
    summaries: list[bytes] = []
    alive: list[int] = []
    last = None
    for r in roots:
        tree = rows.get(r)
        if tree is None:
            tree = rows[r] = row(r)
        else:
            out.reused += 1
        found = tree[0]
        if found:
            if tree[1] or len(found) > 1:
                alive.append(r)
            firsts.append(found[0])
            summaries.append(summary(r))
            last = r
        kept.of[r] = p
    block = kept.at[p] = Block(roots, b"".join(firsts), b"".join(summaries), len(firsts),
                               alive, last)
    return block


def forget(rows: dict, touched: list[int]) -> None:
    """Drop the blocks of ``rows`` that hold any of ``touched`` (roots, and
    positions no longer roots: the caller passes both)."""
    kept: _Kept | None = rows.get(_BLOCKS)
    if kept is None or not kept.at:
        return
    pop_of, pop_at = kept.of.pop, kept.at.pop
    for i in touched:
        p = pop_of(i, None)
        if p is not None:
            pop_at(p, None)


def prune(rows: dict) -> None:
    """Drop the blocks whose trees ``rows`` no longer keeps (a rotating
    answer drops trees its start has passed): what blocks hold stays within
    what the rows hold."""
    kept: _Kept | None = rows.get(_BLOCKS)
    if kept is None:
        return
    for p in [p for p, block in kept.at.items() if block.roots[0] not in rows]:
        del kept.at[p]
