"""A Galera cluster that goes back in time.

Every node of a 3-node cluster with ``innodb_flush_log_at_trx_commit = 0``
is killed -9 within one second, after a new provider and two claims were
acknowledged and read by every API worker; the operator bootstraps from
the most advanced node.  The database no longer holds them -- and every
worker must then answer what the database holds, within 5 s of the
database answering again: the lost provider gone from candidates, the
usage back, a host created after recovery a candidate, and after 5 more
claims the usage the database holds.
"""

from __future__ import annotations

import time
import uuid

import pytest
import requests

from tests.faults.lab import checker, net
from tests.faults.lab.history import PROJECT, USER, headers, make_providers
from tests.faults.lab.runner import ask_all

pytestmark = [pytest.mark.xdist_group("faultlab"), pytest.mark.slow]

ATTEMPTS = 3


def _claim(lab, provider: str, amount: int = 1) -> None:
    def put() -> requests.Response:
        return requests.put(f"{lab.api_url}/allocations/{uuid.uuid4()}", headers=headers(),
                            timeout=30, json={
                                "allocations": {provider: {"resources": {"VCPU": amount}}},
                                "project_id": PROJECT, "user_id": USER,
                                "consumer_generation": None})
    resp = net.call_in(lab.client.netns, put)
    assert resp.status_code == 204, resp.text


def _in_step(lab, bound: float = checker.BOUND) -> checker.Convergence:
    return checker.converge(ask_all(lab), lab.truth(), bound)


def test_every_worker_follows_the_database_back_in_time(galera_lab):
    lab = galera_lab
    [kept] = make_providers(lab.client.netns, lab.api_url, 1, 16, tag="kept")
    for _ in range(3):
        _claim(lab, kept)
    durable = 3
    # A crash loses the log buffers' tail only if no node wrote it to disk
    # first (InnoDB may, at any moment): a crash that lost nothing proves
    # nothing, and the scenario is played again on top of it.
    for attempt in range(ATTEMPTS):
        # All of that durable; what follows lives only in the nodes' log buffers.
        lab.galera.flush_logs()
        time.sleep(0.5)
        [lost] = make_providers(lab.client.netns, lab.api_url, 1, 16, tag=f"lost{attempt}")
        _claim(lab, kept, 2)
        seen = ask_all(lab)(checker.worker_view)
        assert len(seen) == sum(api.workers for api in lab.apis)
        for worker, view in seen.items():
            assert lost in view.candidates and view.usage[kept] == durable + 2, worker

        spread = lab.galera.kill_all()
        assert spread < 1.0
        lab.galera.recover_all()
        truth = checker.read_truth(lab.truth())
        if lost not in truth.providers and truth.usage[kept] == durable:
            break
        lab.wait_database()
        kept_back = _in_step(lab)
        assert kept_back.seconds is not None, kept_back.last
        durable = truth.usage[kept]
    else:
        pytest.fail(f"in {ATTEMPTS} crashes the database never lost its last commits: "
                    "this run proves nothing")
    lab.wait_database()

    back = _in_step(lab)
    assert back.seconds is not None, back.last
    [new] = make_providers(lab.client.netns, lab.api_url, 1, 16, tag="new")
    for _ in range(5):
        _claim(lab, kept)
    after = _in_step(lab)
    assert after.seconds is not None, after.last
    for worker, view in ask_all(lab)(checker.worker_view).items():
        assert new in view.candidates and lost not in view.candidates, worker
        assert lost not in view.providers, worker
        assert view.usage[kept] == durable + 5, worker
