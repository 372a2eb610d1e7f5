"""A limited candidates answer kept tree by tree, encoded, between requests.

Schedulers ask the same few limited queries over and over (nova: one per
flavor, ``limit=1000``), and between two of them a claim or two changes one
host or two.  A limited answer takes the trees' candidates in rounds: the
first candidate of every tree in turn, then the second of those with more,
until the limit (``engine.search._spread``).  Here, for each kind of
request, each tree's candidates are kept *encoded* (the JSON of their
allocation requests, and of the tree's provider summaries), and the next
request of the kind drops only what the trees touched since hold
(``LiveSnapshot.touched_since``), then assembles the answer from the
rest: its cost follows the trees that changed and the size of the answer,
not the work of making every candidate and summary again.

A random answer (``randomize_allocation_candidates``, which many
schedulers asking at once want so as not to claim the same hosts) is
assembled the same way from each tree's candidates kept whole, drawn from
at random: randomness costs no more searching than order does.

Only where the answer is the same taken tree by tree: no sharing provider
in the world (one tree's candidates are then never another's and its
summaries describe its own providers), a limit and no
``max_allocation_candidates``, summaries of whole trees (from 1.29).
Everything else goes the general way (``engine.answer``).

The pieces are written by the encoder the caller names (engine.codec): the
engine keeps and joins bytes whose words it does not know.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from allotment.engine import first_round, rotation
from allotment.engine.codec import Encoder
from allotment.engine.live import LiveSnapshot
from allotment.engine.plan import Plan
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.search import Candidate, tree_candidates

# Where a section keeps the world's state it was last brought to:
# (LiveSnapshot.touch_mark, the version of the names).
_STATE = None
# Where the rows of a kind keep the number of rounds its last answer took.
_DEPTH = -1
# A random answer draws from a tree's candidates kept whole, up to this
# many; a tree with more (a host of many interchangeable devices) is
# searched in a random order each time, as the general path does.
WHOLE_TREE = 64
_MANY = object()  # rows' mark of such a tree: searched afresh every time
# The memory random answers keep: at most this many trees kept whole per
# kind of request (each at most WHOLE_TREE candidates).  A random answer
# visits a random thousand hosts, so over time every tree of the world would
# be kept for every kind: at 10,000 NUMA hosts and 8 kinds, about 190 MB of
# a worker's own.  Past it, a tree is searched afresh (in order, then drawn
# from at random) and not kept: what the bound saves in memory is paid in
# CPU, on big worlds only (a world of this many hosts or fewer is kept whole).
WHOLE_TREES_KEPT = 4096


@dataclass(frozen=True)
class Assembled:
    """The encoded allocation requests of an answer, and the encoded
    summaries of its trees, in the order of the answer, as pieces the
    encoder wrote: a piece may hold several requests or trees, joined
    (engine.first_round); ``reused``: how many trees' kept candidates it
    took; ``count``: how many requests."""

    requests: list[bytes]
    summaries: list[bytes]
    reused: int = 0
    count: int = 0


def serves(snap: object, request: AllocationCandidatesRequest) -> bool:
    """Whether an answer to ``request`` over ``snap`` can be kept tree by
    tree (see the module docstring; the caller checks the rest)."""
    return (type(snap) is LiveSnapshot and not snap.sharing and request.limit is not None
            and request.nested_aware)


def _brought_up(section: dict, snap: LiveSnapshot, names_version: int) -> None:
    """Drop from ``section`` (root -> what is kept of its tree) every tree
    touched since it was last brought up."""
    state = section.get(_STATE)
    touched = (None if state is None or state[1] != names_version
               else snap.touched_since(state[0]))
    if touched is None:
        section.clear()
    else:
        root, pop = snap.root, section.pop
        for i in touched:
            # The position itself (a root dropped, or no longer a root) and
            # the tree it is in now.
            pop(i, None)
            pop(root[i], None)
        first_round.forget(section, [*touched, *map(root.__getitem__, touched)])
    section[_STATE] = (snap.touch_mark(), names_version)


def assemble(snap: LiveSnapshot, memo: Callable[[Hashable], dict], names_version: int,
             request: AllocationCandidatesRequest, encoder: Encoder,
             summaries_of: Callable[[tuple[int, ...]], tuple],
             rng: random.Random | None = None, rotate: bool = False) -> Assembled:
    """The answer to ``request`` over ``snap`` (held still by the caller;
    ``names_version``: the version of the names it is read with), from
    what is kept of each tree (in ``memo``'s sections) and made again for
    the trees touched since; ``summaries_of`` gives a tree's provider
    summaries (its member positions in UUID order).  With ``rng`` the
    hosts, and each host's candidates, come in a random order
    (``randomize_allocation_candidates``); else with ``rotate`` the rounds
    start at a host that moves on as the world changes (engine.rotation,
    ``rotate_allocation_candidates``)."""
    plan = Plan.compile(snap, request)
    limit = request.limit
    if plan is None or not limit:
        return Assembled([], [])
    # Requests hold mappings (not hashable): their text names their kind.
    kind = repr(dataclasses.replace(request, limit=None))
    trees = memo(("candidate-round-trees", encoder.shape))
    _brought_up(trees, snap, names_version)
    many = snap.trees_of_many().get

    def summary(r: int) -> bytes:
        # A tree's summary as kept, made only for a tree not kept.
        found = trees.get(r)
        if found is None:
            found = trees[r] = encoder.tree(summaries_of(many(r) or (r,)))
        return found

    if rng is None:
        rows = memo(("candidate-rounds", kind, encoder.shape))
        _brought_up(rows, snap, names_version)
        anchors = plan.anchors(None)
        first = rotation.start(snap) if rotate else None
        at = rotation.offset(snap, anchors, first) if first is not None else 0
        found = _in_order(plan, anchors, at, rows, encoder.candidate, trees, summary, limit)
        if first is not None and found.walked is not None:
            reached = rotation.rank(snap, found.walked)
            rotation.trim(rows, snap, first, reached)
            rotation.trim(trees, snap, first, reached)
            first_round.prune(rows)
            first_round.prune(trees)
        # The summaries' trees in UUID order, as the general path writes them.
        return Assembled(found.requests, found.summaries_in_order(), found.reused, found.count)
    rows = memo(("candidate-rounds-whole", kind, encoder.shape))
    _brought_up(rows, snap, names_version)
    requests, roots, reused = _at_random(plan, rows, encoder.candidate, limit, rng)
    # The summaries' trees in UUID order, as the general path writes them.
    roots.sort(key=snap.uuids.__getitem__)
    return Assembled(requests, list(map(summary, roots)), reused, len(requests))


def _in_order(plan: Plan, anchors: list[int], at: int, rows: dict,
              encode: Callable[[Candidate], bytes], trees: dict,
              summary: Callable[[int], bytes],
              limit: int) -> first_round.Round:
    """An answer in rounds over ``anchors`` from position ``at`` round to
    the one before it: each tree's candidates in its search's order, as many
    of them kept as answers took (the first round's, with the later rounds'
    requests added)."""

    def row(r: int, need: int) -> list:
        # [encoded candidates (at most need), whether there may be more]
        found: list[bytes] = []
        for cand in tree_candidates(plan, r):
            found.append(encode(cand))
            if len(found) == need:
                return [found, True]
        return [found, False]

    # How many rounds the last answer of this kind took: a tree made again
    # is searched that deep at once, not once per round.
    depth = rows.get(_DEPTH, 1)
    found = first_round.take(anchors, at, rows, lambda r: row(r, depth), trees, summary,
                             limit)
    # Later rounds: the next candidate of each tree that has one.
    alive = []
    for r in found.alive if found.count < limit else ():
        kept = rows.get(r)
        if kept is None:
            kept = rows[r] = row(r, depth)
        alive.append((r, kept))
    k = 1
    while alive and found.count < limit:
        still = []
        for r, kept in alive:
            if len(kept[0]) <= k:
                if not kept[1]:
                    continue
                kept = rows[r] = row(r, max(k + 1, 2 * len(kept[0])))
                if len(kept[0]) <= k:
                    continue
            found.requests.append(kept[0][k])
            found.count += 1
            still.append((r, kept))
            if found.count == limit:
                break
        alive, k = still, k + 1
    rows[_DEPTH] = k
    return found


def _at_random(plan: Plan, rows: dict, encode: Callable[[Candidate], bytes],
               limit: int, rng: random.Random) -> tuple[list[bytes], list[int], int]:
    """(encoded requests, roots of the answer, trees reused) of a random
    answer: the hosts in a random order, taking turns as a limited answer's
    do, each giving its candidates in a random order.  A tree's candidates
    are kept whole (up to :data:`WHOLE_TREE` of them) and drawn from at
    random; a tree with more is searched afresh in a random order."""
    reused = 0
    requests: list[bytes] = []
    roots: list[int] = []
    # (root, the rest of its candidates: (kept, the one drawn) until a
    # later round needs them in order, then an iterator)
    alive: list[tuple[int, object]] = []
    get = rows.get
    # Its special keys (_STATE) count as trees: the bound is approximate by one.
    room = WHOLE_TREES_KEPT - len(rows)
    for r in plan.anchors(rng):
        kept = get(r)
        if kept is None:
            found = [encode(c) for c in itertools.islice(tree_candidates(plan, r),
                                                         WHOLE_TREE + 1)]
            kept = found if len(found) <= WHOLE_TREE else _MANY
            if room > 0:
                rows[r] = kept
                room -= 1
        else:
            reused += 1
        if kept is _MANY:
            rest: object = (encode(c) for c in tree_candidates(plan, r, rng))
            first = next(rest, None)
            if first is None:
                continue
        elif not kept:
            continue
        elif len(kept) == 1:
            first, rest = kept[0], None
        else:
            drawn = rng.randrange(len(kept))
            first, rest = kept[drawn], (kept, drawn)
        requests.append(first)
        roots.append(r)
        if rest is not None:
            alive.append((r, rest))
        if len(requests) == limit:
            return requests, roots, reused
    while alive and len(requests) < limit:
        still = []
        for r, rest in alive:
            if type(rest) is tuple:
                kept, drawn = rest
                others = kept[:drawn] + kept[drawn + 1:]
                rng.shuffle(others)
                rest = iter(others)
            found = next(rest, None)
            if found is None:
                continue
            requests.append(found)
            still.append((r, rest))
            if len(requests) == limit:
                break
        alive = still
    return requests, roots, reused
