"""Several allotment-api processes -- separate hosts -- on one database.

Two independent servers (each its own gunicorn master with two workers, as
on two machines) share a PostgreSQL or MariaDB database.  Claims for the
last units of one provider race across both: exactly its capacity is
granted.  And every process answers from what the others wrote, on the
very next request.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.harness import backends, servers

pytestmark = pytest.mark.slow
HOSTS = 2
CLIENTS = 12
CAPACITY = 10


def _headers(version: str = "1.36") -> dict[str, str]:
    return {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}"}


@pytest.fixture(scope="module", params=[b for b in backends.BACKENDS if b != "sqlite"])
def hosts(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp(f"hosts-{request.param}")
    database_url = backends.create_database(request.param, workdir, "allotment_hosts")
    started = []
    try:
        for i in range(HOSTS):
            started.append(servers.start_allotment(database_url, workdir / f"host{i}",
                                                   workers=2))
        yield started
    finally:
        for server in started:
            server.stop()
        backends.drop_database(request.param, database_url)


def _provider(url: str, vcpus: int) -> str:
    rp = str(uuid.uuid4())
    resp = requests.post(f"{url}/resource_providers", headers=_headers(),
                         json={"name": f"shared-{rp}", "uuid": rp}, timeout=30)
    assert resp.status_code == 200, resp.text
    resp = requests.put(f"{url}/resource_providers/{rp}/inventories", headers=_headers(),
                        json={"resource_provider_generation": 0,
                              "inventories": {"VCPU": {"total": vcpus}}}, timeout=30)
    assert resp.status_code == 200, resp.text
    return rp


def _claim(session, url: str, rp: str) -> int:
    return session.put(f"{url}/allocations/{uuid.uuid4()}", headers=_headers(), timeout=60,
                       json={"allocations": {rp: {"resources": {"VCPU": 1}}},
                             "project_id": "p", "user_id": "u",
                             "consumer_generation": None}).status_code


def test_claims_racing_across_hosts_grant_exactly_the_capacity(hosts):
    rp = _provider(hosts[0].url, CAPACITY)
    barrier = threading.Barrier(CLIENTS)
    local = threading.local()

    def attempt(i: int) -> int:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            barrier.wait(timeout=60)
        return _claim(local.session, hosts[i % HOSTS].url, rp)

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        statuses = list(pool.map(attempt, range(CAPACITY * 4)))
    assert statuses.count(204) == CAPACITY, statuses
    assert set(statuses) == {204, 409}, statuses
    for host in hosts:
        for _ in range(4):  # each worker of each host
            usages = requests.get(f"{host.url}/resource_providers/{rp}/usages",
                                  headers=_headers(), timeout=30).json()["usages"]
            assert usages == {"VCPU": CAPACITY}
            cands = requests.get(f"{host.url}/allocation_candidates?resources=VCPU:1",
                                 headers=_headers(), timeout=30).json()
            assert rp not in cands["provider_summaries"]


def test_each_host_sees_the_others_writes_on_the_next_request(hosts):
    session = requests.Session()
    for step in range(6):
        writer, reader = hosts[step % HOSTS], hosts[(step + 1) % HOSTS]
        rp = _provider(writer.url, 4)
        assert _claim(session, writer.url, rp) == 204
        # The very next request on the other host, whichever worker takes it.
        for _ in range(3):
            cands = session.get(f"{reader.url}/allocation_candidates?resources=VCPU:3",
                                headers=_headers(), timeout=30).json()
            assert cands["provider_summaries"][rp]["resources"]["VCPU"] == {
                "capacity": 4, "used": 1}
        assert _claim(session, reader.url, rp) == 204
        for _ in range(3):
            cands = session.get(f"{writer.url}/allocation_candidates?resources=VCPU:3",
                                headers=_headers(), timeout=30).json()
            assert rp not in cands["provider_summaries"]
            listed = session.get(f"{writer.url}/resource_providers?resources=VCPU:2",
                                 headers=_headers(), timeout=30).json()
            assert rp in {p["uuid"] for p in listed["resource_providers"]}
