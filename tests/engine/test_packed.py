"""Whole tree answers kept packed (allotment.engine.packed, engine.kept), by
the API's codec (allotment.api.candidates_codec)."""

from __future__ import annotations

import random

import orjson
import pytest

from allotment.api.candidates_codec import CODEC, MAPPINGS, allocation_request
from allotment.engine import (
    AllocationCandidatesRequest,
    Inventory,
    ProviderRecord,
    SearchGroup,
    Snapshot,
    anchors,
    find_candidates,
    kept,
    provider_summary_uuids,
)
from allotment.engine.live import LiveSnapshot
from allotment.engine.packed import Packed
from tests.engine.test_candidates_properties import pid

# Two isolated groups of one device each: 4 x 3 = 12 candidates per host.
REQUEST = AllocationCandidatesRequest.for_microversion(
    (1, 39), groups=(SearchGroup(suffix="", resources={"VCPU": 1}),
                     SearchGroup(suffix="1", resources={"CUSTOM_DEVICE": 1}),
                     SearchGroup(suffix="2", resources={"CUSTOM_DEVICE": 1})),
    group_policy="isolate")


def _records(hosts: int = 6) -> list[ProviderRecord]:
    records = []
    for h in range(1, hosts + 1):
        root = pid(10 * h)
        records.append(ProviderRecord(uuid=root, inventories={"VCPU": Inventory(total=8)}))
        records += [ProviderRecord(uuid=pid(10 * h + d), parent_uuid=root,
                                   inventories={"CUSTOM_DEVICE": Inventory(total=1)})
                    for d in (1, 2, 3, 4)]
    return records


def _expanded(found) -> list:
    return [c for item in found
            for c in (CODEC.candidates(item) if type(item) is Packed else (item,))]


@pytest.fixture
def walks(monkeypatch) -> list:
    calls: list = []
    real = anchors._AnchorSearch.walk

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(anchors._AnchorSearch, "walk", counted)
    return calls


@pytest.fixture
def small_budget(monkeypatch) -> None:
    # 30 providers, a budget of 30 results: a tree's share is 5 of its 12.
    monkeypatch.setattr(kept, "MIN_BUDGET", 12)


def test_a_packed_answer_gives_back_its_candidates_and_their_encoding():
    cands = list(find_candidates(Snapshot.build(_records(1)), REQUEST))
    packed = Packed(cands[0].anchor, cands, CODEC)
    assert packed.count == 12 and CODEC.candidates(packed) == cands
    assert CODEC.unpack(packed) == b",".join(
        orjson.dumps(allocation_request(c, MAPPINGS)) for c in cands)
    assert packed.providers == frozenset(u for c in cands for u in c.allocations)
    # Counted by its compressed size, at a kept result a kilobyte.
    assert packed.size() < len(CODEC.unpack(packed)) // 4
    assert packed.results() == -(-packed.size() // 1024)


def test_an_answer_bigger_than_the_budget_is_kept_packed(small_budget, walks):
    records = _records()
    live = LiveSnapshot.build(records)
    assert live._kept.per_tree() == 5
    fresh = list(find_candidates(Snapshot.build(records), REQUEST))
    assert len(fresh) == 72
    first = list(find_candidates(live, REQUEST, packer=CODEC))
    assert first == fresh  # the first answer is the candidates themselves
    searched = len(walks)
    again = list(find_candidates(live, REQUEST, packer=CODEC))
    # One packed answer per tree, in the trees' order, and no search.
    assert all(type(p) is Packed for p in again) and len(again) == 6
    assert [p.anchor for p in again] == [pid(10 * h) for h in range(1, 7)]
    assert _expanded(again) == fresh and len(walks) == searched
    assert (provider_summary_uuids(live, again, nested_aware=True)
            == provider_summary_uuids(live, fresh, nested_aware=True))


def test_requests_that_do_not_take_packed_answers_get_candidates(small_budget, walks):
    live = LiveSnapshot.build(_records())
    fresh = list(find_candidates(Snapshot.build(_records()), REQUEST))
    list(find_candidates(live, REQUEST, packer=CODEC))
    for kwargs in ({}, {"strategy": "breadth-first", "packer": CODEC},
                   {"max_candidates": 50, "packer": CODEC}, {"limit": 40, "packer": CODEC}):
        got = list(find_candidates(live, REQUEST, **kwargs))
        assert all(type(c) is not Packed for c in got)
        want = list(find_candidates(Snapshot.build(_records()), REQUEST, **kwargs))
        assert got == want
    # A limit small enough for the prefixes kept beside the packed answers
    # searches nothing.
    want = list(find_candidates(Snapshot.build(_records()), REQUEST, limit=12))
    searched = len(walks)
    assert list(find_candidates(live, REQUEST, limit=12, packer=CODEC)) == want
    assert len(walks) == searched
    rng = random.Random(1)
    shuffled = list(find_candidates(live, REQUEST, randomize=True, rng=rng, packer=CODEC))
    assert all(type(c) is not Packed for c in shuffled)
    assert sorted(map(repr, shuffled)) == sorted(map(repr, fresh))
    # The packed answers are still there for the next request that takes them.
    assert all(type(p) is Packed for p in find_candidates(live, REQUEST, packer=CODEC))


def test_a_tree_that_changed_is_searched_again_and_packed_again(small_budget, walks):
    records = _records()
    live = LiveSnapshot.build(records)
    for _ in range(2):
        list(find_candidates(live, REQUEST, packer=CODEC))
    live.add_usage([(pid(21), "CUSTOM_DEVICE", 1)])
    fresh = Snapshot.build(records).with_usage({pid(21): {"CUSTOM_DEVICE": 1}})
    want = list(find_candidates(fresh, REQUEST))
    got = list(find_candidates(live, REQUEST, packer=CODEC))
    assert [type(c) is Packed for c in got].count(True) == 5
    assert _expanded(got) == want and len(want) == 66
    got = list(find_candidates(live, REQUEST, packer=CODEC))
    assert all(type(p) is Packed for p in got) and _expanded(got) == want


def test_a_packed_answer_is_kept_only_within_the_budget(monkeypatch):
    # A budget too small for even one packed tree beside the prefixes:
    # whatever is kept, the answers stay right.
    monkeypatch.setattr(kept, "MIN_BUDGET", 1)
    monkeypatch.setattr(kept.Packed, "results", lambda self: 1_000)
    live = LiveSnapshot.build(_records())
    fresh = list(find_candidates(Snapshot.build(_records()), REQUEST))
    for _ in range(3):
        got = list(find_candidates(live, REQUEST, packer=CODEC))
        assert got == fresh
    assert live._kept.results <= live._kept.budget()
