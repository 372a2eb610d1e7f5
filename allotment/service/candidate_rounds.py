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

Only where the answer is the same taken tree by tree: no sharing provider
in the world (one tree's candidates are then never another's and its
summaries describe its own providers), a limit and no
``max_allocation_candidates``, no random order, summaries of whole trees
(from 1.29).  Everything else goes the general way
(``service.allocation_candidates.find``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from allotment import telemetry
from allotment.engine.live import LiveSnapshot
from allotment.engine.plan import Plan
from allotment.engine.request import AllocationCandidatesRequest
from allotment.engine.search import Candidate, tree_candidates
from allotment.world.model import World

# Where a section keeps the world's state it was last brought to:
# (LiveSnapshot.touch_mark, World.names_version).
_STATE = None
# Where the rows of a kind keep the number of rounds its last answer took.
_DEPTH = -1


@dataclass(frozen=True)
class Encoders:
    """How the renderer writes one candidate's allocation request, and one
    tree's provider summaries (as ``"uuid":{...}`` entries, for the
    members given as summaries), each as it stands in the answer (with
    whatever separator the renderer puts before it); ``shape`` names what
    they write (microversion thresholds), so that answers of another shape
    are kept apart."""

    candidate: Callable[[Candidate], bytes]
    tree: Callable[[tuple], bytes]
    shape: tuple


@dataclass(frozen=True)
class Assembled:
    """The encoded allocation requests of an answer, and the encoded
    summaries of its trees, in the order of the answer."""

    requests: list[bytes]
    summaries: list[bytes]


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
    section[_STATE] = (snap.touch_mark(), names_version)


def assemble(world: World, request: AllocationCandidatesRequest, encoders: Encoders,
             summaries_of: Callable[[tuple[int, ...]], tuple]) -> Assembled:
    """The answer to ``request`` over ``world`` (held still by the caller),
    from what is kept of each tree and made again for the trees touched
    since; ``summaries_of`` gives a tree's provider summaries (its member
    positions in UUID order)."""
    snap = world.snapshot
    assert isinstance(snap, LiveSnapshot)
    plan = Plan.compile(snap, request)
    limit = request.limit
    if plan is None or not limit:
        return Assembled([], [])
    # Requests hold mappings (not hashable): their text names their kind.
    kind = repr(dataclasses.replace(request, limit=None))
    rows = world.memo(("candidate-rounds", kind, encoders.shape))
    trees = world.memo(("candidate-round-trees", encoders.shape))
    _brought_up(rows, snap, world.names_version)
    _brought_up(trees, snap, world.names_version)
    many = snap.trees_of_many().get
    encode = encoders.candidate

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
    reused = 0
    requests: list[bytes] = []
    summaries: list[bytes] = []
    alive: list[tuple[int, list]] = []
    get = rows.get
    for r in plan.anchors(None):
        kept = get(r)
        if kept is None:
            kept = rows[r] = row(r, depth)
        else:
            reused += 1
        if kept[0]:
            alive.append((r, kept))
            requests.append(kept[0][0])
            encoded = trees.get(r)
            if encoded is None:
                encoded = trees[r] = encoders.tree(summaries_of(many(r) or (r,)))
            summaries.append(encoded)
            if len(requests) == limit:
                break
    # Later rounds: the next candidate of each tree that has one.
    k = 1
    while alive and len(requests) < limit:
        still = []
        for r, kept in alive:
            if len(kept[0]) <= k:
                if not kept[1]:
                    continue
                kept = rows[r] = row(r, max(k + 1, 2 * len(kept[0])))
                if len(kept[0]) <= k:
                    continue
            requests.append(kept[0][k])
            still.append((r, kept))
            if len(requests) == limit:
                break
        alive, k = still, k + 1
    rows[_DEPTH] = k
    if reused:
        telemetry.metrics().kept_hits.inc(reused)
    return Assembled(requests, summaries)
