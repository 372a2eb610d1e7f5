"""The budget of answers a changing snapshot keeps (allotment.engine.kept)."""

from __future__ import annotations

from allotment.engine import kept


def _store(providers: int, budget: int, monkeypatch) -> kept.Store:
    monkeypatch.setattr(kept, "MIN_BUDGET", budget)
    return kept.Store(lambda: providers)


def test_the_budget_is_the_size_of_the_world_or_the_minimum(monkeypatch):
    assert _store(5, 10, monkeypatch).budget() == 10
    assert _store(50, 10, monkeypatch).budget() == 50


def test_replacing_an_answer_counts_it_once(monkeypatch):
    store = _store(0, 10, monkeypatch)
    kind = store.kind("a")
    kind.keep(1, "stamp", ["x"] * 3, 3)
    kind.keep(1, "newer", ["x"] * 4, 4)
    assert store.results == 4 and kind[1] == ("newer", ["x"] * 4, 4)


def test_the_kinds_asked_for_least_recently_give_way(monkeypatch):
    store = _store(0, 10, monkeypatch)
    a, b, c = store.kind("a"), store.kind("b"), store.kind("c")
    for r in range(4):
        a.keep(r, r, "answer", 1)
        b.keep(r, r, "answer", 1)
    store.kind("a")  # "a" is now the most recent: "b" goes first
    for r in range(4):
        c.keep(r, r, "answer", 1)
    assert store.results <= 10
    assert "b" not in store.kinds and len(a) == 4 and len(c) == 4
    assert store.results == 8


def test_an_answer_larger_than_the_budget_is_not_kept(monkeypatch):
    store = _store(0, 10, monkeypatch)
    other = store.kind("other")
    other.keep(0, 0, "answer", 5)
    kind = store.kind("big")
    kind.keep(0, 0, "answer", 11)
    assert 0 not in kind and store.results == 0 and "other" not in store.kinds
    kind.keep(1, 1, "answer", 10)
    assert store.results == 10 and 1 in kind
    # A stale answer that no longer fits is dropped, not left behind.
    kind.keep(1, 2, "answer", 11)
    assert 1 not in kind and store.results == 0


def test_a_kind_dropped_while_its_search_runs_keeps_nothing_more(monkeypatch):
    store = _store(0, 10, monkeypatch)
    old = store.kind("old")
    old.keep(0, 0, "answer", 4)
    new = store.kind("new")
    new.keep(0, 0, "answer", 8)  # makes room: "old" is dropped
    assert "old" not in store.kinds and store.results == 8
    # A search of the dropped kind that was still running finishes: what it
    # keeps neither counts against the budget nor is found again.
    old.keep(1, 1, "answer", 1)
    assert store.results == 8 and store.kind("old") is not old


def test_a_tree_keeps_at_most_its_share_of_the_budget(monkeypatch):
    monkeypatch.setattr(kept, "MIN_BUDGET", 1000)
    assert kept.Store(lambda: 0, lambda: 10).per_tree() == kept.PER_TREE
    assert kept.Store(lambda: 0, lambda: 100).per_tree() == 10
    assert kept.Store(lambda: 0, lambda: 5000).per_tree() == 1
    assert kept.Store(lambda: 20_000, lambda: 1000).per_tree() == 20
