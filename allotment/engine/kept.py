"""Answers a changing snapshot keeps per tree between requests.

A tree's candidates depend only on the request and on the providers of the
tree and the sharing providers serving it.  A :class:`LiveSnapshot` gives
every provider position a revision that changes whenever anything about the
provider does (and is never reused), so an answer stamped with those
revisions stays right until the stamp no longer matches.  The snapshot holds
the kept answers for the few kinds of request asked most recently
(``LiveSnapshot.lonely_memo``); a snapshot that never changes keeps none.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterator

from allotment.engine.plan import Plan

# Results kept at least, however small the world.
MIN_BUDGET = 10_000

# A tree's answer is kept only when it is at most this many results: a tree
# with many interchangeable providers can have thousands, and a request with
# a limit takes few of them.
PER_TREE = 64


def tree_answer(plan: Plan, r: int, rng: random.Random | None,
                kind_of: Callable[[Plan], Hashable],
                search: Callable[[], Iterator[tuple]],
                keep: Callable[[list], None] | None = None) -> Iterator[tuple]:
    """The results of ``search()`` for the tree rooted at ``r``, kept for
    requests of the kind ``kind_of(plan)`` names (everything about the
    request that the results depend on; worked out once per plan) and
    reused while the tree's stamp holds.  ``keep`` sees the results before
    they are kept.  Nothing is kept in a random order."""
    snap = plan.snapshot
    revisions = snap.position_revisions()
    if revisions is None or rng is not None:
        return search()
    answers = plan.kept.get(kind_of)
    if answers is None:
        answers = plan.kept[kind_of] = snap.kept_answers(kind_of(plan))
    stamp = (tuple(map(revisions.__getitem__, snap.tree_members(r))),
             tuple(map(revisions.__getitem__, snap.sharing_by_anchor.get(r, ()))))
    found = answers.get(r)
    if found is not None and found[0] == stamp:
        return iter(found[1])
    return _recorded(search(), answers, r, stamp, keep)


def _recorded(produced: Iterator[tuple], answers: Kind, r: int, stamp: object,
              keep: Callable[[list], None] | None) -> Iterator[tuple]:
    """``produced`` as it comes, kept once it has all been taken (a request
    with a limit may stop early: then there is nothing whole to keep)."""
    results: list | None = []
    for item in produced:
        if results is not None:
            results.append(item)
            if len(results) > PER_TREE:
                results = None
        yield item
    if results is not None:
        if keep is not None:
            keep(results)
        answers.keep(r, stamp, results, max(1, len(results)))


class Kind(dict):
    """Kept answers of one kind of request: root position ->
    ``(stamp, answer, results counted)``."""

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def keep(self, r: int, stamp: object, answer: object, count: int) -> None:
        """Keep ``answer`` for root ``r`` if the budget allows (making room
        by dropping the kinds asked for least recently)."""
        store = self.store
        old = self.get(r)
        if old is not None:
            store.results -= old[2]
            del self[r]
        if store.results + count > store.budget():
            store.make_room(count, self)
            if store.results + count > store.budget():
                return
        self[r] = (stamp, answer, count)
        store.results += count


class Store:
    """The kept answers of one changing snapshot, by kind of request."""

    def __init__(self, providers: Callable[[], int]) -> None:
        self._providers = providers
        self.kinds: dict[Hashable, Kind] = {}
        self.results = 0

    def budget(self) -> int:
        return max(MIN_BUDGET, self._providers())

    def kind(self, key: Hashable) -> Kind:
        """The answers kept for ``key``, now the kind asked for most recently."""
        found = self.kinds.pop(key, None)
        if found is None:
            found = Kind(self)
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
