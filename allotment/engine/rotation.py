"""Where a rotating limited answer starts, and what it keeps meanwhile.

With ``[allotment] rotate_allocation_candidates`` a limited answer takes
the trees' candidates in the same rounds as the deterministic order
(engine.rounds), but the first round starts at a host that moves on as the
world changes: the root whose rank among all roots (UUID order) is the sum
of every provider's generation, times :data:`STEP`, modulo the number of
roots.  Every write moves some generation on, so schedulers asking one
after another get different first hosts (those the last claim left are
next), while an answer stays a function of the world and the request: two
workers that have read the database to the same point give the same one.

The start moves by a few hosts per write, not to a random place, so the
answer keeps what the deterministic order keeps (each tree's candidates, in
order) and searches afresh only the trees a write touched and the few the
start brought into reach.  Trees the start has passed are dropped once a
section holds twice as many trees as the widest answer reaches, so a
section never keeps more than about that (see :func:`trim`).
"""

from __future__ import annotations

import bisect

from allotment.engine.live import LiveSnapshot

# Roots the start moves on per unit of generation.  A claim on a NUMA host
# moves two or three providers' generations: the start moves as many hosts,
# so the first ten hosts of two answers a claim apart mostly differ while
# a kind asked again after twenty writes searches about fifty trees afresh.
STEP = 1
# Where a section keeps the widest reach of the answers that used it: how
# many roots (UUID order) from the start their first round walked.
_REACH = -2


def start(snap: LiveSnapshot) -> int:
    """The rank among ``snap.roots`` of the root rounds start at now."""
    roots = len(snap.roots)
    if not roots:
        return 0
    # Kept by the snapshot as generations are set (engine.generations).
    return snap.generations_total() * STEP % roots


def offset(snap: LiveSnapshot, anchors: list[int], first: int) -> int:
    """The position in ``anchors`` (roots in UUID order) of the first of them
    at or after the root of rank ``first``: rounds walk from there to the
    end, then from the beginning to just before it (0 past the last)."""
    if not anchors:
        return 0
    uuids = snap.uuids
    at = bisect.bisect_left(anchors, uuids[snap.roots[first]], key=uuids.__getitem__)
    return at if at < len(anchors) else 0


def rank(snap: LiveSnapshot, root: int) -> int:
    """The rank of ``root`` among ``snap.roots`` (UUID order)."""
    uuids = snap.uuids
    return bisect.bisect_left(snap.roots, uuids[root], key=uuids.__getitem__)


def trim(section: dict, snap: LiveSnapshot, first: int, reached: int) -> None:
    """Note that an answer's first round, from the root of rank ``first``,
    walked to the root of rank ``reached``; past twice the widest such reach
    in trees kept, drop from ``section`` (root -> what is kept of its tree)
    every tree outside that reach from ``first``: trees the start has
    passed, searched again if it comes round to them."""
    roots = len(snap.roots)
    reach = max(section.get(_REACH, 0), (reached - first) % roots + 1 if roots else 0)
    section[_REACH] = reach
    if len(section) <= 2 * reach + 8:
        return
    # Each kept tree's rank found by its root's UUID: ranking every root
    # instead cost 4 ms a trim at 10,000 hosts.
    for r in [r for r in section if type(r) is int and r >= 0
              and _ahead(snap, r, first, roots) >= reach]:
        del section[r]


def _ahead(snap: LiveSnapshot, r: int, first: int, roots: int) -> int:
    """How many roots (UUID order) ``r`` comes after the root of rank
    ``first``; ``roots`` when ``r`` is a root no longer."""
    if r >= len(snap.uuids) or snap.uuids[r] is None:
        return roots
    k = rank(snap, r)
    if k >= roots or snap.roots[k] != r:
        return roots
    return (k - first) % roots
