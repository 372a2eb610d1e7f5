"""Running a write again when the database gave it up for reasons of its own.

A transaction the database aborts to settle a conflict with another one (a
deadlock on one server; on a Galera cluster also a certification failure,
a transaction aborted by a write set being applied, which may surface as a
savepoint gone or an error during COMMIT) wrote nothing, and the same work
run again is what a client would do on a 503.  Run here instead, the client
gets the answer one server would have given: 200, 400 or 409.

A node of a cluster that cannot take work yet (joining, or cut off from the
majority) is waited for a little: a load balancer moves clients to another
node within seconds.  Only past that wait does the client see the 503.

SQLite's "database is locked" is not run again by default: it comes after
the whole busy timeout (60 s) was waited, and the client hears of it then.

One loop, :func:`run`, does all of this; a :class:`Policy` says what else
it runs again and what the client hears at the end.  Allocation writes
use one with ``[placement] allocation_conflict_retry_count`` attempts that
also runs lost generation races again and answers 409 when they run out.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from allotment import errors, telemetry
from allotment.storage import faults

LOG = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# How many times an aborted transaction is run before its 503 is passed on.
# On a Galera cluster every write through two nodes at once conflicts on
# the change feed's next row, and a busy machine sees long runs: writes
# through two nodes of the test cluster (tests/galera) met runs of up to
# 7 aborts in a row in four runs of 20 s, and on a loaded machine one
# write in 3,400 once ran out of 10 attempts.  Twenty take at most about
# 4 s of pauses.
ATTEMPTS = 20
# The pause before attempt n is random (so two writers that keep meeting
# part), up to FIRST_PAUSE * 2**n seconds, never more than LONGEST_PAUSE.
FIRST_PAUSE = 0.004
LONGEST_PAUSE = 0.25
# How long (seconds) a node that cannot take work is asked again.
NOT_READY_WAIT = 3.0
NOT_READY_PAUSE = 0.2


@dataclass(frozen=True)
class Policy:
    """What a write is run again after, how often, and what is raised when
    every attempt failed."""

    attempts: int = ATTEMPTS
    # Failures besides aborted transactions that mean the write lost a race
    # with another writer; run again at once, without a pause.
    lost_races: tuple[type[Exception], ...] = ()
    # Whether a transaction aborted after waiting out a whole lock timeout
    # is run again too (allocation writes treat it as one more lost race).
    after_lock_wait: bool = False
    # Raised instead of the last failure once the attempts are used up.
    gave_up: Callable[[], Exception] | None = None
    # Logged and counted in allotment_write_retries_total under this name.
    counted_as: str | None = None


# Every write but an allocation's: aborted transactions, 503 at the end.
WRITES = Policy()


def pause(attempt: int) -> None:
    """Wait before running an aborted transaction for the ``attempt``-th time."""
    time.sleep(random.uniform(0, min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** attempt)))


def run(work: Callable[[], T], policy: Policy = WRITES) -> T:
    """``work()``, run again while the database aborts it (see above) or,
    as ``policy`` says, while it loses races."""
    attempts = max(1, policy.attempts)
    failed = 0
    deadline: float | None = None
    while True:
        try:
            return work()
        except errors.NodeNotReady:
            now = time.monotonic()
            if deadline is None:
                deadline = now + NOT_READY_WAIT
            if now >= deadline:
                raise
            time.sleep(NOT_READY_PAUSE)
            continue
        except errors.TransactionAborted as exc:
            if not policy.after_lock_wait and faults.waited_out_a_lock(exc):
                raise
            failure: Exception = exc
            reason = type(exc.__cause__).__name__
            aborted = True
        except policy.lost_races as exc:
            failure, reason, aborted = exc, type(exc).__name__, False
        failed += 1
        if policy.counted_as is not None:
            LOG.debug("Retrying %s (attempt %d of %d) after %s",
                      policy.counted_as, failed, attempts, reason)
        if failed >= attempts:
            if policy.counted_as is not None:
                LOG.warning("Exceeded retry limit of %d on %s", attempts, policy.counted_as)
            if policy.gave_up is None:
                raise failure
            raise policy.gave_up()
        if policy.counted_as is not None:
            telemetry.metrics().retries.inc()
        if aborted:
            # Two writers that keep aborting each other part.
            pause(failed)


def retried(func: Callable[P, T]) -> Callable[P, T]:
    """``func`` (one or more whole write transactions), run through :func:`run`."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return run(lambda: func(*args, **kwargs))
    return wrapper
