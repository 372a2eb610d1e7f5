"""The log of positions a changing snapshot touched (engine.revisions.TouchLog,
LiveSnapshot.touched_since): what per-tree keepers drop, and only that."""

from __future__ import annotations

from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from allotment.engine.revisions import TouchLog


def record(uuid: str, parent: str | None = None, vcpu: int = 4) -> ProviderRecord:
    return ProviderRecord(uuid=uuid, name=uuid, generation=0, parent_uuid=parent,
                          root_uuid=None, inventories={"VCPU": Inventory(total=vcpu)},
                          traits=frozenset(), aggregates=frozenset())


def test_a_mark_sees_what_came_after_it_until_forgotten():
    log = TouchLog(lambda: 1)
    log.FLOOR = 4
    log.add(1)
    mark = log.mark()
    log.add(2)
    log.add(3)
    assert log.since(mark) == [2, 3]
    assert log.since(log.mark()) == []
    for i in range(10):
        log.add(i)
    # Past twice the floor the older half goes: an old mark knows nothing.
    assert log.since(mark) is None
    assert log.since(log.mark() - 1) == [9]


def test_usage_trees_and_deletions_are_logged():
    snap = LiveSnapshot.build([record("a"), record("b"), record("b1", parent="b")])
    at = snap.index.__getitem__
    mark = snap.touch_mark()
    assert snap.touched_since(mark) == []
    snap.add_usage([("a", "VCPU", 1)])
    assert set(snap.touched_since(mark)) == {at("a")}
    mark = snap.touch_mark()
    b1 = at("b1")
    snap.replace_trees(["b"], [record("b")])  # b1 deleted
    touched = set(snap.touched_since(mark))
    assert at("b") in touched and b1 in touched
