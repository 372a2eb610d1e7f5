"""Answers a changing snapshot keeps per tree between requests.

A tree's candidates depend only on the request and on the providers of the
tree and the sharing providers serving it.  A :class:`LiveSnapshot` gives
every provider position a revision that changes whenever anything about the
provider does (and is never reused), so an answer stamped with those
revisions stays right until the stamp no longer matches.  The snapshot holds
the kept answers for the few kinds of request asked most recently
(``LiveSnapshot.kept_answers``); a snapshot that never changes keeps none.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence

from allotment.engine.packed import PACKED, Packed
from allotment.engine.plan import READY, Plan
from allotment.engine.snapshot import Snapshot

# Results kept at least, however small the world.
MIN_BUDGET = 10_000

# At most this many of a tree's results are kept: a tree with many
# interchangeable providers can have thousands, and a request with a limit
# takes few of them.  A tree with more keeps this many as a prefix.  So
# that one kind of request with big trees cannot take the whole budget for
# the first trees and leave nothing for the rest (whose searches a request
# with a limit would then repeat every time), a tree keeps no more than its
# share of the budget either.
PER_TREE = 64


class Taken(list):
    """A tree's results in the order its search gives them, as far as
    requests have taken them; ``whole`` once the search has run out.
    ``packed``: all of them (when there are more than are kept one by one),
    for requests that take a tree's answer packed (see engine.packed)."""

    __slots__ = ("packed", "whole")

    def __init__(self, items: Iterable = ()) -> None:
        super().__init__(items)
        self.whole = False
        self.packed: Packed | None = None


def tree_answer(plan: Plan, r: int, rng: random.Random | None,
                kind_of: Callable[[Plan], Hashable],
                search: Callable[[], Iterator[tuple]],
                finisher: Callable[[Plan, int], Callable[[tuple], tuple]] | None = None,
                ) -> Iterator[tuple]:
    """The results of ``search()`` for the tree rooted at ``r``, kept for
    requests of the kind ``kind_of(plan)`` names (everything about the
    request that the results depend on; worked out once per plan) and
    reused while the tree's stamp holds.  ``finisher(plan, r)`` gives what
    to keep (and hand out) for each result the search finds.  Nothing is
    kept in a random order."""
    snap = plan.snapshot
    revisions = snap.position_revisions()
    if revisions is None or rng is not None:
        return search()
    answers = _answers(plan, kind_of)
    stamp = _stamp(snap, revisions, r)
    found = answers.get(r)
    if found is not None and found[0] == stamp:
        answers.store.hits += 1
        if found[1].whole:
            return iter(found[1])
        if found[1].packed is not None and plan.packer is not None:
            return iter(((PACKED, found[1].packed),))
        return _recorded(plan, r, search, answers, stamp, finisher, found[1])
    return _recorded(plan, r, search, answers, stamp, finisher, ())


def _answers(plan: Plan, kind_of: Callable[[Plan], Hashable]) -> Kind:
    answers = plan.kept.get(kind_of)
    if answers is None:
        answers = plan.kept[kind_of] = plan.snapshot.kept_answers(kind_of(plan))
    return answers


def _stamp(snap: Snapshot, revisions: Sequence[int], r: int) -> tuple:
    """The revisions a tree's answer depends on: its own providers' and
    those of the sharing providers serving it."""
    return (tuple(map(revisions.__getitem__, snap.tree_members(r))),
            tuple(map(revisions.__getitem__, snap.sharing_by_anchor.get(r, ()))))


def peeker(plan: Plan, kind_of: Callable[[Plan], Hashable],
           ) -> Callable[[int], Taken | None] | None:
    """A function of a root giving what :func:`tree_answer` would hand out
    first for its tree without searching: the results kept for requests of
    the kind ``kind_of(plan)`` names while the tree's stamp holds (``whole``
    when that is all of them), else None.  None where the snapshot keeps
    nothing.  A request that takes one result of each tree in turn (a
    limit) mostly needs no more than this, and so no search of its own."""
    snap = plan.snapshot
    revisions = snap.position_revisions()
    if revisions is None:
        return None
    answers = _answers(plan, kind_of)
    held, store = answers.get, answers.store
    # Snapshot.tree_members and sharing_by_anchor, looked up once.
    many, served = snap.trees_of_many().get, snap.sharing_by_anchor.get
    at = revisions.__getitem__

    def peek(r: int) -> Taken | None:
        found = held(r)
        if found is None:
            return None
        # _stamp, inlined: this runs once per tree of the cloud.
        stamp = found[0]
        if (stamp[0] != tuple(map(at, many(r) or (r,)))
                or stamp[1] != tuple(map(at, served(r, ())))):
            return None
        store.hits += 1
        return found[1]

    return peek


def _recorded(plan: Plan, r: int, search: Callable[[], Iterator[tuple]], answers: Kind,
              stamp: object, finisher: Callable[[Plan, int], Callable[[tuple], tuple]] | None,
              prefix: Sequence[tuple]) -> Iterator[tuple]:
    """The tree's results: first ``prefix`` (what an earlier request took of
    the same search), then, only if more are wanted, the search's own from
    where the prefix ends (while the stamp holds, the search gives the same
    results in the same order).  What is taken is kept as it comes, so a
    request that stops early (a limit, trees taking turns) leaves its prefix
    for the next one; a tree that runs out is kept whole."""
    taken: Taken | None = Taken(prefix)  # as it stands now, whatever is kept later
    yield from taken
    produced = search()
    if taken:
        produced = itertools.islice(produced, len(taken), None)
    finish = None
    cap = answers.store.per_tree()
    # Everything, for a request that wants all of every tree and takes
    # answers packed, as long as every result is a finished candidate: one
    # that other trees may reach too goes through deduplication each time.
    everything = list(taken) if plan.packer is not None and _ready(taken) else None
    for item in produced:
        if finisher is not None:
            if finish is None:
                finish = finisher(plan, r)
            item = finish(item)
        if everything is not None:
            if item[0] is READY:
                everything.append(item)
            else:
                everything = None
        if taken is not None:
            n = len(taken)
            if n >= cap:
                taken = None  # the first ``cap`` stay kept, as a prefix
            else:
                taken.append(item)
                if item[0] is READY:
                    item[1].reused = True  # kept: renderers may keep their work
                # Counted against the budget as it doubles (a prefix left
                # behind is counted at least half), not item by item.
                if n & (n + 1) == 0 and not answers.keep(r, stamp, taken, n + 1):
                    taken = None  # no room
        yield item
    if taken is not None:
        taken.whole = True
        answers.keep(r, stamp, taken, max(1, len(taken)))
    elif everything is not None:
        _keep_packed(plan, r, answers, stamp, everything)


def _ready(items: Iterable[tuple]) -> bool:
    return all(item[0] is READY for item in items)


def _keep_packed(plan: Plan, r: int, answers: Kind, stamp: object,
                 everything: list[tuple]) -> None:
    """Keep the tree's whole answer packed beside the prefix kept of it one
    by one (which requests with a limit hand out), if the budget allows."""
    packed = Packed(plan.snapshot.uuids[r], (cand for _, cand in everything), plan.packer)
    count = packed.results()
    if count > answers.store.per_tree():
        return  # more than the tree's share, as a prefix would be
    old = answers.get(r)
    prefix, counted = Taken(), 0
    if old is not None and old[0] == stamp:
        prefix, counted = old[1], old[2]
    both = Taken(prefix)
    both.packed = packed
    if not answers.keep(r, stamp, both, counted + count) and counted:
        answers.keep(r, stamp, prefix, counted)  # the prefix at least, as before


class Kind(dict):
    """Kept answers of one kind of request: root position ->
    ``(stamp, answer, results counted)``."""

    __slots__ = ("key", "store")

    def __init__(self, store: Store, key: Hashable) -> None:
        super().__init__()
        self.store = store
        self.key = key

    def keep(self, r: int, stamp: object, answer: object, count: int) -> bool:
        """Keep ``answer`` for root ``r`` if the budget allows (making room
        by dropping the kinds asked for least recently); whether it did."""
        store = self.store
        if store.kinds.get(self.key) is not self:
            return False  # dropped to make room while a search was still running
        old = self.get(r)
        if old is not None:
            store.results -= old[2]
            del self[r]
        if store.results + count > store.budget():
            store.make_room(count, self)
            if store.results + count > store.budget():
                return False
        self[r] = (stamp, answer, count)
        store.results += count
        return True


class Store:
    """The kept answers of one changing snapshot, by kind of request."""

    def __init__(self, providers: Callable[[], int],
                 roots: Callable[[], int] = lambda: 1) -> None:
        self._providers = providers
        self._roots = roots
        self.kinds: dict[Hashable, Kind] = {}
        self.results = 0
        # Trees answered from what was kept (read by the service's metrics).
        self.hits = 0

    def budget(self) -> int:
        return max(MIN_BUDGET, self._providers())

    def per_tree(self) -> int:
        """How many of a tree's results are kept at most."""
        return max(1, min(PER_TREE, self.budget() // max(1, self._roots())))

    def kind(self, key: Hashable) -> Kind:
        """The answers kept for ``key``, now the kind asked for most recently."""
        found = self.kinds.pop(key, None)
        if found is None:
            found = Kind(self, key)
        self.kinds[key] = found
        return found

    def make_room(self, count: int, keeping: Kind) -> None:
        for key in list(self.kinds):
            if self.results + count <= self.budget():
                return
            kind = self.kinds[key]
            if kind is not keeping:
                del self.kinds[key]
                self.results -= sum(entry[2] for entry in kind.values())
