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

import itertools
import random
from collections.abc import Callable, Hashable, Iterator

from allotment.engine.plan import Plan

# A tree's answer is kept only when it is at most this many results: a tree
# with many interchangeable providers can have thousands, and a request with
# a limit takes few of them.
PER_TREE = 64


def tree_answer(plan: Plan, r: int, rng: random.Random | None, kind: Hashable,
                search: Callable[[], Iterator[tuple]],
                keep: Callable[[list], None] | None = None) -> Iterator[tuple]:
    """The results of ``search()`` for the tree rooted at ``r``, kept for
    requests of ``kind`` (everything about the request that the results
    depend on) and reused while the tree's stamp holds.  ``keep`` sees the
    results before they are kept.  Nothing is kept in a random order."""
    snap = plan.snapshot
    revisions = snap.position_revisions()
    if revisions is None or rng is not None:
        return search()
    memo = plan.kept.get(kind)
    if memo is None:
        memo = plan.kept[kind] = snap.lonely_memo(kind)
    stamp = (tuple(map(revisions.__getitem__, snap.tree_members(r))),
             tuple(map(revisions.__getitem__, snap.sharing_by_anchor.get(r, ()))))
    found = memo.get(r)
    if found is not None and found[0] == stamp:
        return iter(found[1])
    produced = search()
    results = list(itertools.islice(produced, PER_TREE + 1))
    if len(results) > PER_TREE:
        return itertools.chain(results, produced)
    if keep is not None:
        keep(results)
    memo[r] = (stamp, results)
    return iter(results)
