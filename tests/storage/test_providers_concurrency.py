"""Concurrent writers on one provider or one tree never lose an update."""

from __future__ import annotations

import threading

import pytest

from allotment import errors
from allotment.service import inventories, provider_traits
from allotment.service import resource_providers as providers

WRITERS = 6
ROUNDS = 5


def _run(workers) -> list[BaseException]:
    failures: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def wrap(fn):
        def target():
            start.wait()
            try:
                fn()
            except BaseException as exc:  # collected and re-raised by the test
                failures.append(exc)
        return target

    threads = [threading.Thread(target=wrap(w)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return failures


def test_generation_writers_never_lose_an_update(db):
    rp = providers.create_provider(db, name="hot")
    wins: list[int] = []
    lock = threading.Lock()

    def writer(n: int):
        def body():
            for i in range(ROUNDS):
                seen = providers.get_provider(db, rp.uuid).generation
                try:
                    if (n + i) % 2:
                        inventories.replace_inventories(
                            db, rp.uuid, seen, {"VCPU": {"total": 1 + n * 10 + i}},
                            reserved_may_equal_total=True)
                    else:
                        after, _ = provider_traits.set_traits(
                            db, rp.uuid, ["HW_CPU_X86_AVX2"] if i % 2 else [], seen)
                        if after.generation == seen:
                            continue  # already that set: nothing written
                except errors.Conflict as exc:
                    assert exc.code == errors.CONCURRENT_UPDATE
                    continue
                with lock:
                    wins.append(seen)
        return body

    failures = _run([writer(n) for n in range(WRITERS)])
    assert not failures, failures
    # Every success moved the generation by exactly one from what it saw.
    assert sorted(wins) == list(range(len(wins)))
    assert providers.get_provider(db, rp.uuid).generation == len(wins)


@pytest.mark.parametrize("rounds", [4])
def test_concurrent_moves_never_make_a_loop(db, rounds):
    for r in range(rounds):
        a = providers.create_provider(db, name=f"a{r}")
        b = providers.create_provider(db, name=f"b{r}")
        c = providers.create_provider(db, name=f"c{r}", parent_uuid=b.uuid)
        outcomes: list[str] = []

        def move(child, parent, name, outcomes=outcomes):
            def body():
                try:
                    providers.update_provider(db, child.uuid, name=name,
                                              parent_uuid=parent.uuid,
                                              allow_reparenting=True)
                    outcomes.append("ok")
                except errors.BadRequest as exc:
                    assert "creating loop" in exc.detail
                    outcomes.append("loop")
            return body

        # a under c (b's subtree) and b under a at once: both would loop.
        failures = _run([move(a, c, a.name), move(b, a, b.name)])
        assert not failures, failures
        assert sorted(outcomes) == ["loop", "ok"]
        rows = {x.uuid: providers.get_provider(db, x.uuid) for x in (a, b, c)}
        for row in rows.values():
            # Walking up always reaches a root, and it is the recorded one.
            seen, current = set(), row
            while current.parent_provider_uuid is not None:
                assert current.uuid not in seen
                seen.add(current.uuid)
                current = rows[current.parent_provider_uuid]
            assert row.root_provider_uuid == current.uuid
