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

SQLite's "database is locked" is not run again here: it comes after the
whole busy timeout (60 s) was waited, and the client hears of it then.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from allotment import errors
from allotment.storage import faults

P = ParamSpec("P")
T = TypeVar("T")

# How many times an aborted transaction is run before its 503 is passed on.
ATTEMPTS = 10
# The pause before attempt n is random (so two writers that keep meeting
# part), up to FIRST_PAUSE * 2**n seconds, never more than LONGEST_PAUSE.
FIRST_PAUSE = 0.004
LONGEST_PAUSE = 0.25
# How long (seconds) a node that cannot take work is asked again.
NOT_READY_WAIT = 3.0
NOT_READY_PAUSE = 0.2


def pause(attempt: int) -> None:
    """Wait before running an aborted transaction for the ``attempt``-th time."""
    time.sleep(random.uniform(0, min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** attempt)))


def run(work: Callable[[], T], *, attempts: int = ATTEMPTS) -> T:
    """``work()``, run again while the database aborts it (see above)."""
    aborted = 0
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
        except errors.TransactionAborted as exc:
            aborted += 1
            if aborted >= attempts or faults.waited_out_a_lock(exc):
                raise
            pause(aborted)


def retried(func: Callable[P, T]) -> Callable[P, T]:
    """``func`` (one or more whole write transactions), run through :func:`run`."""
    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return run(lambda: func(*args, **kwargs))
    return wrapper
