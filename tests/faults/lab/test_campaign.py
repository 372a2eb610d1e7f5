"""The short campaign: every fault class once on Galera and once on
PostgreSQL, each under four clients of claims, moves, deletes, inventory
changes and new hosts through haproxy, judged by the checker (checker.py):
nothing acknowledged lost but what the database itself lost, nothing
refused stored, no provider over capacity, every worker's world equal to
the database within 5 s, never a 5xx but a proper 503.

A fault the kernel here cannot inject is skipped with the reason; more
than one fault class skipped fails the campaign.  The long run is
``scripts/fault-lab --minutes N``.
"""

from __future__ import annotations

import pytest

from tests.faults.lab.conftest import _needs
from tests.faults.lab.faults import BY_NAME
from tests.faults.lab.runner import Result, run_fault

pytestmark = [pytest.mark.xdist_group("faultlab"), pytest.mark.slow]

# One fault of each class (partition, latency, pause, crash) per backend;
# the others (one-way drops, an API host cut off, paused or killed API
# workers, one Galera node killed) run in scripts/fault-lab's long run.
CAMPAIGN = {
    "galera": ["writer-isolated", "slow-writer", "pause-writer", "crash-all-nodes"],
    "postgres": ["writer-from-haproxy", "slow-writer", "pause-writer", "crash-primary"],
}
RESULTS: list[Result] = []


def _run(lab, name: str) -> None:
    result = run_fault(lab, BY_NAME[name], hold=4.0)
    RESULTS.append(result)
    print(result.row())
    if result.skipped:
        pytest.skip(result.skipped)
    problems = result.problems()
    assert not problems, "\n".join(problems[:20])


# Found by the lab, and fixed: with the Galera writer stopped for 4 s under
# load, a claim for a new consumer took 10.2 s, was answered 409 "consumer
# generation conflict - expected 1 but got None" -- and was stored (once in
# six runs): its COMMIT had failed with error 1180 (the write set not
# appended once the node lost its primary component), which was run again
# as an abort although the other nodes had applied it.  Such a commit is
# now a 503 whose outcome the client must read back
# (tests/api/test_write_retries.py); the checker counts it as unknown.


@pytest.mark.parametrize("name", CAMPAIGN["galera"])
def test_galera(galera_lab, name):
    _run(galera_lab, name)


@pytest.mark.parametrize("name", CAMPAIGN["postgres"])
def test_postgres(postgres_lab, name):
    _run(postgres_lab, name)


def test_at_most_one_fault_class_skipped():
    reason = _needs()
    if reason:
        pytest.skip(reason)
    ran = {(r.backend, r.fault) for r in RESULTS}
    wanted = {(b, f) for b, faults in CAMPAIGN.items() for f in faults}
    if ran != wanted:
        pytest.skip("the campaign was not run whole")
    skipped = {r.cls: r.skipped for r in RESULTS if r.skipped}
    assert len(skipped) <= 1, f"fault classes skipped: {skipped}"
