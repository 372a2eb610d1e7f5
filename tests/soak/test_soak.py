"""Sustained mixed load against four workers, bounded and audited.

Many clients claim, delete, replace inventories, set traits, reshape and
ask for candidates for a fixed time.  Afterwards: no answer was a 5xx (or
missing), no provider is over capacity, every allocation the clients were
told succeeded is there and every refused one is not, the in-memory world
agrees with the tables, and no worker grew by more than MEMORY_BOUND_MB.

The suite runs a short version; ``scripts/soak`` the long one
(``ALLOTMENT_SOAK_SECONDS``, ``ALLOTMENT_SOAK_CLIENTS``), which also
requires ``ALLOTMENT_SOAK_MIN_CLAIMS`` claims per database and writes what
it measured to ``ALLOTMENT_SOAK_REPORT``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.harness import backends, servers
from tests.harness.workload import Workload, audit, candidates_agree

pytestmark = pytest.mark.slow
SECONDS = float(os.environ.get("ALLOTMENT_SOAK_SECONDS", "10"))
CLIENTS = int(os.environ.get("ALLOTMENT_SOAK_CLIENTS", "8"))
REPORT = os.environ.get("ALLOTMENT_SOAK_REPORT")
# The long run must also have claimed at least this much (scripts/soak: 10,000).
MIN_CLAIMS = int(os.environ.get("ALLOTMENT_SOAK_MIN_CLAIMS", "0"))
WORKERS = 4
# Growth of any one worker's resident memory from after warm-up to the end.
MEMORY_BOUND_MB = 64
# Enough deletes that capacity keeps coming free and claims keep landing.
WEIGHTS = {"claim_pair": 3, "claim_one": 3, "delete": 5, "candidates": 3,
           "inventory": 1, "traits": 1, "reshape": 1}


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _workers(server) -> list[int]:
    return server.pids[1:]


@pytest.fixture(params=backends.BACKENDS)
def soak_server(request, tmp_path):
    database_url = backends.create_database(request.param, tmp_path, "allotment_soak")
    server = servers.start_allotment(database_url, tmp_path / "api", workers=WORKERS)
    try:
        yield request.param, server, database_url
    finally:
        server.stop()
        backends.drop_database(request.param, database_url)


def test_sustained_mixed_load(soak_server):
    backend, server, database_url = soak_server
    workload = Workload([server.url], providers=8, vcpus=16, reshape_pairs=4,
                        seed=7, weights=WEIGHTS)
    workload.run(CLIENTS, seconds=min(3.0, SECONDS))  # warm-up: every worker loaded
    workers = _workers(server)
    assert len(workers) == WORKERS
    before = {pid: _rss_mb(pid) for pid in workers}
    started = time.monotonic()
    workload.run(CLIENTS, seconds=SECONDS)
    elapsed = time.monotonic() - started
    after = {pid: _rss_mb(pid) for pid in workers}
    assert _workers(server) == workers, "a worker was restarted"

    result = audit(workload, database_url)
    candidates_agree(server.url, workload, result["usage"], tries=WORKERS * 2)
    statuses = result["statuses"]
    failures = {s: n for s, n in statuses.items() if s == "no answer" or s >= 500}
    growth = max(after[p] - before[p] for p in workers)
    report = {
        "backend": backend, "seconds": round(elapsed, 1), "clients": CLIENTS,
        "workers": WORKERS, "requests": sum(statuses.values()),
        "claims": result["claims"], "claims_granted": result["claims_ok"],
        "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
        "rss_mb_before": round(max(before.values()), 1),
        "rss_mb_after": round(max(after.values()), 1),
        "rss_growth_mb_max": round(growth, 1),
    }
    print(json.dumps(report))
    if REPORT:
        with open(REPORT, "a") as out:
            out.write(json.dumps(report) + "\n")
    assert not failures, failures
    assert result["claims_ok"] > 0
    assert result["claims"] >= MIN_CLAIMS, "too few claims: run longer"
    assert growth <= MEMORY_BOUND_MB, (before, after)
