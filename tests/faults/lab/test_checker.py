"""The lab's judge of a history against the database (checker.judge),
without a lab: which acknowledged writes a crash took with the database's
lost tail, and which would be allotment's loss."""

from __future__ import annotations

from tests.faults.lab.checker import Crash, Truth, judge
from tests.faults.lab.history import Op

HOST = "host"
CRASH_AT, BACK_AT = 100.0, 110.0


def _claim(consumer: str, start: float, end: float, kind: str = "claim",
           target: str = HOST) -> Op:
    return Op(client=0, kind=kind, subject=consumer, target=target, start=start, end=end,
              status=204, outcome="ok")


def _truth(holdings: dict[str, str]) -> Truth:
    return Truth(holdings=holdings, providers={HOST: (1, None, HOST)},
                 usage={HOST: len(holdings)}, capacity={HOST: 10}, candidates={HOST},
                 feed_head=1)


def _verdict(ops: list[Op], kept: dict[str, str], back_at: float | None = BACK_AT):
    return judge(ops, _truth(kept), [Crash(CRASH_AT, 50, 1, CRASH_AT - 0.05, back_at)])


def test_a_write_answered_just_after_the_crash_went_with_the_lost_tail():
    # Committed before the kill; its answer reached the client 1 ms after.
    verdict = _verdict([_claim("kept", 90.0, 90.5), _claim("late", 99.9, CRASH_AT + 0.001)],
                       {"kept": HOST})
    assert verdict.lost_by_database and not verdict.lost_by_allotment


def test_a_write_answered_once_the_database_was_back_is_allotments_loss():
    verdict = _verdict([_claim("late", 99.9, BACK_AT + 1.0)], {})
    assert verdict.lost_by_allotment and not verdict.lost_by_database


def test_without_a_known_recovery_a_write_answered_after_the_crash_is_allotments_loss():
    verdict = _verdict([_claim("late", 99.9, CRASH_AT + 0.001)], {}, back_at=None)
    assert verdict.lost_by_allotment


def test_a_write_begun_after_the_crash_is_allotments_loss():
    verdict = _verdict([_claim("after", CRASH_AT + 0.5, CRASH_AT + 0.6)], {})
    assert verdict.lost_by_allotment


def test_a_hole_before_a_surviving_later_write_is_allotments_loss():
    verdict = _verdict([_claim("lost", 90.0, 90.5), _claim("later", 91.0, 91.5)],
                       {"later": HOST})
    assert [text.split()[1] for text in verdict.lost_by_allotment] == ["lost"]
    assert not verdict.lost_by_database


def test_a_later_write_committed_after_the_recovery_proves_no_hole():
    # Begun before the crash, its request waited and was committed once the
    # database was back: the earlier write still went with the lost tail.
    verdict = _verdict([_claim("lost", 90.0, 90.5), _claim("waited", 99.0, BACK_AT + 2.0)],
                       {"waited": HOST})
    assert verdict.lost_by_database and not verdict.lost_by_allotment


def test_a_later_write_overwritten_since_proves_no_hole():
    # The move just before the crash went to where the consumer already was,
    # and a move after the recovery left what the database holds: nothing
    # shows the first move survived, so the lost claim before it went with
    # the tail.
    ops = [_claim("lost", 90.0, 90.5),
           _claim("moved", 80.0, 80.5), _claim("moved", 91.0, 91.5, "move"),
           _claim("moved", BACK_AT + 5, BACK_AT + 6, "move", "other")]
    verdict = _verdict(ops, {"moved": "other"})
    assert verdict.lost_by_database and not verdict.lost_by_allotment
