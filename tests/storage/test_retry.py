"""Writes the database aborted are run again (storage/retry.py)."""

from __future__ import annotations

import time

import pytest

from allotment import errors
from allotment.storage import retry


@pytest.fixture(autouse=True)
def _no_pauses(monkeypatch):
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.0)
    monkeypatch.setattr(retry, "NOT_READY_PAUSE", 0.01)


def _failing(times: int, exc: type[Exception]):
    calls = []

    def work():
        calls.append(1)
        if len(calls) <= times:
            raise exc("conflict")
        return "done"
    return work, calls


def test_an_aborted_transaction_is_run_again_until_it_commits():
    work, calls = _failing(3, errors.TransactionAborted)
    assert retry.run(work) == "done"
    assert len(calls) == 4


def test_a_transaction_aborted_every_time_is_a_503_after_the_attempts():
    work, calls = _failing(100, errors.TransactionAborted)
    with pytest.raises(errors.TransactionAborted):
        retry.run(work, retry.Policy(attempts=5))
    assert len(calls) == 5


def test_other_failures_are_not_run_again():
    for exc in (errors.DatabaseUnavailable, errors.Conflict, errors.BadRequest):
        work, calls = _failing(1, exc)
        with pytest.raises(exc):
            retry.run(work)
        assert len(calls) == 1


def test_a_node_not_ready_is_waited_for_then_passed_on(monkeypatch):
    work, calls = _failing(2, errors.NodeNotReady)
    assert retry.run(work) == "done" and len(calls) == 3
    monkeypatch.setattr(retry, "NOT_READY_WAIT", 0.1)
    work, _ = _failing(10_000, errors.NodeNotReady)
    started = time.monotonic()
    with pytest.raises(errors.NodeNotReady):
        retry.run(work)
    assert 0.1 <= time.monotonic() - started < 2


def test_retried_keeps_the_function_and_its_arguments():
    seen = []

    @retry.retried
    def write(a, *, b):
        """Doc."""
        seen.append((a, b))
        if len(seen) < 2:
            raise errors.TransactionAborted("again")
        return a + b

    assert write(1, b=2) == 3 and seen == [(1, 2), (1, 2)]
    assert write.__doc__ == "Doc." and write.__name__ == "write"


def test_sqlite_lock_waited_out_is_not_waited_for_again():
    import sqlite3

    import sqlalchemy as sa

    from allotment.storage import faults

    calls = []

    def work():
        calls.append(1)
        orig = sa.exc.OperationalError("BEGIN IMMEDIATE", {},
                                       sqlite3.OperationalError("database is locked"))
        raise faults.translate(orig) from orig

    with pytest.raises(errors.TransactionAborted):
        retry.run(work)
    assert len(calls) == 1
