"""The world's provider id -> UUID map: a mapping like the dict it replaced,
in a fraction of the memory when ids are dense (as a database gives them)."""

from __future__ import annotations

import pickle
import random
import tracemalloc

import pytest

from allotment.world.ids import UuidsById


def _uuid(i: int) -> str:
    return f"{i:08x}-0000-4000-8000-000000000000"


@pytest.mark.parametrize("seed", range(5))
def test_it_answers_as_a_dict_under_any_sequence_of_changes(seed):
    rng = random.Random(seed)
    ours, theirs = UuidsById(), {}
    for _ in range(3000):
        # Mostly dense ids, some far past the rest, some negative or reused.
        # and some just past the list's reach, which it grows to cover later.
        pid = rng.choice((rng.randrange(500), rng.randrange(500, 4000),
                          rng.randrange(10**6, 10**9), rng.randrange(-5, 0)))
        action = rng.random()
        if action < 0.6:
            ours[pid] = theirs[pid] = _uuid(rng.randrange(10**6))
        elif action < 0.8:
            assert ours.pop(pid, None) == theirs.pop(pid, None)
        elif pid in theirs:
            del ours[pid]
            del theirs[pid]
        else:
            with pytest.raises(KeyError):
                del ours[pid]
        assert len(ours) == len(theirs)
        probe = rng.choice((pid, rng.randrange(-3, 4000)))
        assert ours.get(probe) == theirs.get(probe)
        assert (probe in ours) == (probe in theirs)
    assert dict(ours) == theirs
    assert sorted(ours.items()) == sorted(theirs.items())
    assert dict(pickle.loads(pickle.dumps(ours))) == theirs
    for pid in range(-3, 600):
        if pid in theirs:
            assert ours[pid] == theirs[pid]
        else:
            with pytest.raises(KeyError):
                ours[pid]


def test_an_id_kept_apart_is_found_once_the_list_reaches_it():
    # An id past the list's reach is kept apart; ids written since make the
    # list grow past it, and it is still found, counted once, listed once.
    held, expected = UuidsById(), {}
    held[3000] = expected[3000] = _uuid(3000)
    for pid in range(1, 1500):
        held[pid] = expected[pid] = _uuid(pid)
        held[pid + 1500] = expected[pid + 1500] = _uuid(pid + 1500)
    assert held.get(3000) == _uuid(3000)
    assert 3000 in held
    assert dict(held) == expected and len(held) == len(expected)
    held[3000] = expected[3000] = _uuid(1)
    del held[1]
    del expected[1]
    assert dict(held) == expected and len(held) == len(expected)


def _held(n: int, ids) -> int:
    uuids = [_uuid(i) for i in range(n)]  # made before: not counted
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = UuidsById()
        for pid, uuid in zip(ids, uuids, strict=True):
            held[pid] = uuid
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_dense_ids_take_a_few_bytes_each():
    # A dict of 10,000 ints to strings holds about 55 bytes per entry.
    assert _held(10_000, range(1, 10_001)) < 10_000 * 12


def test_ids_far_apart_keep_it_within_a_few_slots_per_id():
    # A counter far ahead of the rows still held: the list does not follow it.
    assert _held(1_000, range(0, 10**8, 10**5)) < 1_000 * 200
