"""Take the database away while the service works, on PostgreSQL and MariaDB.

While clients claim, delete, replace inventories, set traits and reshape,
the database server is killed and restarted, or every connection is cut
from the server side, or a statement runs into the statement timeout.
Every request must be answered -- a 503 in Placement's error shape when
the database is away, never a 500 or a hang -- each write must have
committed completely or not at all, the service must serve again from the
very first request once the database is back, and its in-memory world
must agree with the tables.
"""

from __future__ import annotations

import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from allotment.storage import db as db_mod
from tests.faults.conftest import STATEMENT_TIMEOUT
from tests.harness.workload import PROJECT, USER, Workload, audit, candidates_agree

pytestmark = pytest.mark.slow
CLIENTS = 6


def _headers(version: str = "1.36") -> dict[str, str]:
    return {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}"}


def _claim(url: str, provider: str, amount: int = 1) -> requests.Response:
    return requests.put(f"{url}/allocations/{uuid.uuid4()}", headers=_headers(), timeout=30,
                        json={"allocations": {provider: {"resources": {"VCPU": amount}}},
                              "project_id": PROJECT, "user_id": USER,
                              "consumer_generation": None})


def _serves_at_once(url: str, workload: Workload, count: int = 12) -> None:
    """``count`` requests in a row, each served (none a 503)."""
    for i in range(count):
        if i % 2:
            resp = requests.get(f"{url}/allocation_candidates?resources=VCPU:1&limit=3",
                                headers=_headers(), timeout=30)
            assert resp.status_code == 200, (i, resp.status_code, resp.text)
        else:
            # The providers may be full: a refusal is an answer too.
            resp = _claim(url, workload.providers[i % len(workload.providers)])
            assert resp.status_code in (204, 409), (i, resp.status_code, resp.text)


@pytest.mark.parametrize("how", ["killed", "shut down"])
def test_server_gone_and_restarted_under_load(fault_setup, how):
    db_server, api, database_url = fault_setup
    workload = Workload([api.url], providers=4, vcpus=40, seed=1)

    def crash_and_return():
        time.sleep(1.5)
        if how == "killed":
            db_server.crash()  # as a crash would: transactions cut mid-way
        else:
            db_server.stop()  # an orderly shutdown: sessions told to end
        time.sleep(2.0)
        db_server.start()
        _serves_at_once(api.url, workload)

    workload.run(CLIENTS, seconds=7, during=crash_and_return)
    result = audit(workload, database_url)
    statuses = result["statuses"]
    assert statuses.get(503, 0) > 0, f"the outage went unnoticed: {statuses}"
    assert result["claims_ok"] > 0
    candidates_agree(api.url, workload, result["usage"])


def test_connections_cut_from_the_server_side(fault_setup):
    db_server, api, database_url = fault_setup
    workload = Workload([api.url], providers=4, vcpus=40, seed=2)
    cut: list[int] = []

    def cut_twice():
        for _ in range(2):
            time.sleep(1.0)
            cut.append(db_server.cut_connections(database_url))
            _serves_at_once(api.url, workload, count=6)

    workload.run(CLIENTS, seconds=4, during=cut_twice)
    assert sum(cut) > 0, "no connection was cut"
    result = audit(workload, database_url)
    assert result["claims_ok"] > 0
    candidates_agree(api.url, workload, result["usage"])


def test_a_statement_past_its_timeout_is_a_prompt_503(fault_setup):
    _, api, database_url = fault_setup
    workload = Workload([api.url], providers=1, vcpus=8, reshape_pairs=0, seed=3)
    provider = workload.providers[0]
    engine = sa.create_engine(db_mod.normalise_url(database_url))
    try:
        with engine.connect() as conn, conn.begin():
            # Another client holds the provider's row lock and does not let go.
            conn.execute(sa.text("SELECT id FROM resource_providers WHERE uuid = :u FOR UPDATE"),
                         {"u": provider})
            started = time.monotonic()
            resp = _claim(api.url, provider)
            waited = time.monotonic() - started
            assert resp.status_code == 503, resp.text
            error = resp.json()["errors"][0]
            assert error["status"] == 503 and "retry" in error["detail"].lower()
            assert resp.headers.get("Retry-After")
            assert STATEMENT_TIMEOUT - 0.5 <= waited < STATEMENT_TIMEOUT + 5, waited
    finally:
        engine.dispose()
    # Nothing of the timed-out claim was written; the next one goes through.
    usages = requests.get(f"{api.url}/resource_providers/{provider}/usages",
                          headers=_headers(), timeout=30).json()["usages"]
    assert usages.get("VCPU", 0) == 0
    assert _claim(api.url, provider).status_code == 204
