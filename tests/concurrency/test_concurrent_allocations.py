"""Many clients racing for the last units of one provider, on a real server.

Each test fires at least 8 parallel clients (threads, each with its own HTTP
session) at a multi-worker allotment-api and checks the outcome exactly:
granted == capacity, every refusal a 409, no 500, and every 204 visible
afterwards (no lost write) — both through the API and in the tables.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import sqlalchemy as sa

from allotment.storage import tables

CLIENTS = 12
PROJECT, USER = "race-project", "race-user"

pytestmark = pytest.mark.slow


def _new() -> str:
    return str(uuid.uuid4())


def _provider(server, session, **inventory) -> str:
    rp = _new()
    resp = session.post(f"{server.url}/resource_providers", headers=server.headers(),
                        json={"name": f"race-{rp}", "uuid": rp})
    assert resp.status_code == 200, resp.text
    resp = session.put(f"{server.url}/resource_providers/{rp}/inventories",
                       headers=server.headers(),
                       json={"resource_provider_generation": 0,
                             "inventories": {rc: {"total": n} for rc, n in inventory.items()}})
    assert resp.status_code == 200, resp.text
    return rp


def _race(count: int, attempt) -> list:
    """Run ``attempt(i, session)`` for i in range(count) from CLIENTS threads,
    all released at once."""
    barrier = threading.Barrier(CLIENTS)
    local = threading.local()

    def run(i):
        if not hasattr(local, "session"):
            local.session = requests.Session()
            barrier.wait(timeout=60)
        return attempt(i, local.session)

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        # The first CLIENTS tasks each open a session and meet at the barrier.
        return list(pool.map(run, range(count)))


def _table_usage(server, rp: str) -> dict[str, int]:
    a, rc, rps = tables.allocations, tables.resource_classes, tables.resource_providers
    engine = server.engine()
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.select(rc.c.name, sa.func.sum(a.c.used))
                .select_from(a.join(rc, rc.c.id == a.c.resource_class_id)
                             .join(rps, rps.c.id == a.c.resource_provider_id))
                .where(rps.c.uuid == rp).group_by(rc.c.name))
            return {name: int(used) for name, used in rows}
    finally:
        engine.dispose()


def _provider_allocations(server, rp: str) -> dict:
    resp = requests.get(f"{server.url}/resource_providers/{rp}/allocations",
                        headers=server.headers())
    assert resp.status_code == 200
    return resp.json()["allocations"]


def test_claims_for_the_last_units(live_server):
    """Round after round, every client claims one unit of a small provider at
    the same moment: the edge where the last unit goes is hit many times."""
    server = live_server
    capacity, rounds = 3, 8
    session = requests.Session()
    for _round in range(rounds):
        rp = _provider(server, session, VCPU=capacity)
        consumers = [_new() for _ in range(CLIENTS)]

        def claim(i, session, rp=rp, consumers=consumers):
            resp = session.put(
                f"{server.url}/allocations/{consumers[i]}", headers=server.headers(),
                json={"allocations": {rp: {"resources": {"VCPU": 1}}},
                      "project_id": PROJECT, "user_id": USER,
                      "consumer_generation": None, "consumer_type": "INSTANCE"})
            return resp.status_code, resp.text

        results = _race(len(consumers), claim)
        statuses = Counter(status for status, _ in results)
        assert statuses == {204: capacity, 409: CLIENTS - capacity}, (statuses, results)
        for status, text in results:
            if status == 409:
                assert "The requested amount would exceed the capacity" in text or \
                    "placement.concurrent_update" in text, text

        granted = {consumers[i] for i, (status, _) in enumerate(results) if status == 204}
        held = _provider_allocations(server, rp)
        assert set(held) == granted  # no lost write, nothing extra
        assert _table_usage(server, rp) == {"VCPU": capacity}


def test_many_consumers_at_once_race(live_server):
    """POST /allocations, two consumers per request, all or nothing."""
    server = live_server
    capacity = 9
    rp = _provider(server, requests.Session(), VCPU=capacity)
    pairs = [(_new(), _new()) for _ in range(3 * CLIENTS)]

    def claim(i, session):
        entry = {"allocations": {rp: {"resources": {"VCPU": 1}}},
                 "project_id": PROJECT, "user_id": USER, "consumer_generation": None,
                 "consumer_type": "INSTANCE"}
        resp = session.post(f"{server.url}/allocations", headers=server.headers(),
                            json={pairs[i][0]: entry, pairs[i][1]: entry})
        return resp.status_code

    statuses = Counter(_race(len(pairs), claim))
    # Requests succeed whole while two units remain: 4 of them, 8 units.
    assert statuses == {204: capacity // 2, 409: len(pairs) - capacity // 2}, statuses
    held = _provider_allocations(server, rp)
    assert len(held) == 2 * (capacity // 2)
    for a, b in pairs:
        assert (a in held) == (b in held)  # never half a request
    assert _table_usage(server, rp) == {"VCPU": 2 * (capacity // 2)}


def test_moving_claims_race_new_claims(live_server):
    """Consumers move between two full providers while others try to claim."""
    server = live_server
    session = requests.Session()
    left = _provider(server, session, VCPU=4)
    right = _provider(server, session, VCPU=4)
    movers = [_new() for _ in range(4)]
    for consumer in movers:
        resp = session.put(
            f"{server.url}/allocations/{consumer}", headers=server.headers(),
            json={"allocations": {left: {"resources": {"VCPU": 1}}}, "project_id": PROJECT,
                  "user_id": USER, "consumer_generation": None, "consumer_type": "INSTANCE"})
        assert resp.status_code == 204

    def act(i, session):
        if i < len(movers):
            consumer = movers[i]
            resp = session.get(f"{server.url}/allocations/{consumer}",
                               headers=server.headers())
            gen = resp.json()["consumer_generation"]
            resp = session.put(
                f"{server.url}/allocations/{consumer}", headers=server.headers(),
                json={"allocations": {right: {"resources": {"VCPU": 1}}},
                      "project_id": PROJECT, "user_id": USER,
                      "consumer_generation": gen, "consumer_type": "INSTANCE"})
            return ("move", resp.status_code)
        target = left if i % 2 else right
        resp = session.put(
            f"{server.url}/allocations/{_new()}", headers=server.headers(),
            json={"allocations": {target: {"resources": {"VCPU": 1}}},
                  "project_id": PROJECT, "user_id": USER,
                  "consumer_generation": None, "consumer_type": "INSTANCE"})
        return ("claim", resp.status_code)

    results = _race(4 * CLIENTS, act)
    assert all(status in (204, 409) for _, status in results), results
    for rp in (left, right):
        used = _table_usage(server, rp).get("VCPU", 0)
        assert used <= 4
        assert len(_provider_allocations(server, rp)) == used
    # Every unit is held by exactly one consumer: moves never duplicate or lose.
    claims_won = sum(1 for kind, status in results if kind == "claim" and status == 204)
    total = sum(_table_usage(server, rp).get("VCPU", 0) for rp in (left, right))
    assert total == len(movers) + claims_won


def test_reshape_races_claims(live_server):
    """A VGPU reshape (retried on 409 as a driver would) while clients claim
    VCPU on the same root: the reshape lands, VCPU is granted exactly."""
    server = live_server
    session = requests.Session()
    vcpu = 6
    root = _provider(server, session, VCPU=vcpu, VGPU=4)
    gpus = []
    for n in range(2):
        gpu = _new()
        resp = session.post(f"{server.url}/resource_providers", headers=server.headers(),
                            json={"name": f"gpu{n}-{gpu}", "uuid": gpu,
                                  "parent_provider_uuid": root})
        assert resp.status_code == 200, resp.text
        gpus.append(gpu)
    vms = [_new(), _new()]
    for vm, vgpu in zip(vms, (1, 2), strict=True):
        resp = session.put(
            f"{server.url}/allocations/{vm}", headers=server.headers(),
            json={"allocations": {root: {"resources": {"VGPU": vgpu}}},
                  "project_id": PROJECT, "user_id": USER, "consumer_generation": None,
                  "consumer_type": "INSTANCE"})
        assert resp.status_code == 204

    service = server.headers(**{"X-Roles": "admin,service"})

    def reshape(session):
        for _attempt in range(50):
            gens = {rp: session.get(f"{server.url}/resource_providers/{rp}",
                                    headers=server.headers()).json()["generation"]
                    for rp in [root, *gpus]}
            cgens = [session.get(f"{server.url}/allocations/{vm}",
                                 headers=server.headers()).json()["consumer_generation"]
                     for vm in vms]
            data = {
                "inventories": {
                    root: {"resource_provider_generation": gens[root],
                           "inventories": {"VCPU": {"total": vcpu}}},
                    gpus[0]: {"resource_provider_generation": gens[gpus[0]],
                              "inventories": {"VGPU": {"total": 2}}},
                    gpus[1]: {"resource_provider_generation": gens[gpus[1]],
                              "inventories": {"VGPU": {"total": 2}}},
                },
                "allocations": {
                    vm: {"allocations": {gpu: {"resources": {"VGPU": n}}},
                         "project_id": PROJECT, "user_id": USER,
                         "consumer_generation": gen, "consumer_type": "INSTANCE"}
                    for vm, gpu, n, gen in zip(vms, gpus, (1, 2), cgens, strict=True)
                },
            }
            resp = session.post(f"{server.url}/reshaper", headers=service, json=data)
            if resp.status_code == 204:
                return ("reshape", 204)
            assert resp.status_code == 409, resp.text
        return ("reshape", 409)

    def act(i, session):
        if i == 0:
            return reshape(session)
        resp = session.put(
            f"{server.url}/allocations/{_new()}", headers=server.headers(),
            json={"allocations": {root: {"resources": {"VCPU": 1}}},
                  "project_id": PROJECT, "user_id": USER,
                  "consumer_generation": None, "consumer_type": "INSTANCE"})
        return ("claim", resp.status_code)

    results = _race(3 * CLIENTS, act)
    assert ("reshape", 204) in results, results
    claims = Counter(status for kind, status in results if kind == "claim")
    assert set(claims) <= {204, 409}, claims
    assert claims[204] == vcpu
    assert _table_usage(server, root) == {"VCPU": vcpu}
    assert _table_usage(server, gpus[0]) == {"VGPU": 1}
    assert _table_usage(server, gpus[1]) == {"VGPU": 2}
