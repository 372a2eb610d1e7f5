"""The scheduling mix: its bookkeeping, the verification of a service's books
(which must fail on books that do not hold), the SQL fill and the CPU meter."""

from __future__ import annotations

import http.server
import json
import os
import random
import threading
import time

import pytest

from benchmarks.side_by_side import cpu, fill, flavors, mix, verify
from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.flavors import Flavor
from tests.harness import backends, pg

HOSTS = [f"rp-{i}" for i in range(4)]
CAPACITY = 6  # VCPU per host


class FakePlacement:
    """A tiny Placement: one VCPU per instance, hosts of CAPACITY VCPU.

    ``lose_claims``, ``overcommit`` and ``keep_deleted`` break it in the ways
    the verification must catch; ``race_first_claim`` answers the first
    claim of every instance with a 409, as a scheduler that lost a race sees.
    """

    def __init__(self, *, lose_claims=False, overcommit=False, keep_deleted=False,
                 race_first_claim=False) -> None:
        self.used = dict.fromkeys(HOSTS, 0)
        self.consumers: dict[str, str] = {}
        self.lose, self.overcommit, self.keep = lose_claims, overcommit, keep_deleted
        self.race, self.raced = race_first_claim, set()

    def request(self, method: str, path: str, body=None):
        if method == "GET":
            room = [h for h in HOSTS if self.overcommit or self.used[h] < CAPACITY]
            doc = {"allocation_requests": [
                {"allocations": {h: {"resources": {"VCPU": 1}}}} for h in room]}
            return 200, json.dumps(doc).encode(), 0.001
        consumer = path.rsplit("/", 1)[1]
        if method == "DELETE":
            host = self.consumers.get(consumer)
            if host is None:
                return 404, b"{}", 0.001
            if not self.keep:
                del self.consumers[consumer]
                self.used[host] -= 1
            return 204, b"", 0.001
        (host,) = body["allocations"]
        if self.race and consumer not in self.raced:
            self.raced.add(consumer)
            return 409, b"{}", 0.001
        if self.used[host] >= CAPACITY and not self.overcommit:
            return 409, b"{}", 0.001
        if not self.lose:
            self.consumers[consumer] = host
            self.used[host] += 1
        return 204, b"", 0.001

    def books(self) -> verify.Books:
        return verify.Books(
            inventories={(h, "VCPU"): (CAPACITY, 0, 1.0) for h in HOSTS},
            used={(h, "VCPU"): n for h, n in self.used.items() if n},
            held=set(self.consumers),
            project_usages={"VCPU": sum(self.used.values())} if self.consumers else {})


FLAVOR = (Flavor("one VCPU", "resources=VCPU:1"),)


def _run(service: FakePlacement, count: int, threads: int = 1) -> mix.Ledger:
    ledger = mix.Ledger()
    mix.run(lambda version: service, FLAVOR, count, ledger, threads=threads, seed=3)
    return ledger


def test_books_of_an_honest_service_hold_and_are_counted():
    service = FakePlacement()
    ledger = _run(service, 40, threads=4)
    # 24 VCPU in all: more than that cannot be held, and deletions free room.
    assert 0 < ledger.scheduled <= 40
    assert ledger.deleted <= set(ledger.granted)
    assert len(ledger.gets) >= ledger.scheduled and len(ledger.puts) >= ledger.scheduled
    assert len(ledger.deletes) == len(ledger.deleted)
    assert ledger.scheduled - len(ledger.deleted) == len(service.consumers)
    verdict = verify.check(service.books(), ledger.granted, ledger.deleted)
    assert verdict.ok, verdict.summary()
    assert verdict.summary() == "held"


class _Served(http.server.ThreadingHTTPServer):
    """A FakePlacement behind HTTP, for schedulers in processes of their own."""

    def __init__(self, service: FakePlacement) -> None:
        lock = threading.Lock()
        self.pids: set[str] = set()  # of the processes that asked
        pids = self.pids

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                with lock:
                    pids.add(self.headers["X-Pid"])
                    status, payload, _ = service.request(self.command, self.path, body)
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_DELETE = _answer

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


def _client_telling_its_pid(url: str):
    def make(version):
        client = Client(url)
        client.headers["X-Pid"] = str(os.getpid())
        return client
    return make


def test_schedulers_in_processes_of_their_own_keep_one_set_of_books():
    service = FakePlacement()
    with _Served(service) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ledger = mix.Ledger()
        for seed in range(2):  # the second round deletes instances of the first
            mix.run(_client_telling_its_pid(server.url), FLAVOR, 20, ledger, threads=3,
                    seed=seed, processes=True)
        server.shutdown()
    assert len(server.pids) == 6 and str(os.getpid()) not in server.pids
    assert 0 < ledger.scheduled <= 40 and not ledger.errors
    assert len(ledger.gets) >= ledger.scheduled and len(ledger.puts) >= ledger.scheduled
    assert len(ledger.deletes) == len(ledger.deleted) > 0
    # Every instance is counted once: held, deleted, or still to be deleted.
    assert sorted(ledger.live) == sorted(set(ledger.granted) - ledger.deleted)
    assert ledger.scheduled - len(ledger.deleted) == len(service.consumers)
    assert verify.check(service.books(), ledger.granted, ledger.deleted).ok


def test_a_lost_race_is_retried_with_fresh_candidates_and_counted():
    ledger = _run(FakePlacement(race_first_claim=True), 10)
    assert ledger.scheduled == 10
    assert ledger.conflicts == 10 and len(ledger.puts) == 20 and len(ledger.gets) == 20
    assert ledger.conflict_rate == pytest.approx(0.5)


def test_an_instance_is_given_up_after_the_attempts_and_none_fit_is_no_room():
    service = FakePlacement()
    service.used = dict.fromkeys(HOSTS, CAPACITY)
    ledger = _run(service, 3)
    assert ledger.scheduled == 0 and ledger.no_room == 3 and not ledger.puts

    class AlwaysRaced(FakePlacement):
        def request(self, method, path, body=None):
            if method == "PUT":
                return 409, b"{}", 0.001
            return super().request(method, path, body)

    ledger = _run(AlwaysRaced(), 2)
    assert ledger.gave_up == 2 and ledger.conflicts == 2 * mix.ATTEMPTS


def test_claims_the_service_lost_fail_the_verification():
    service = FakePlacement(lose_claims=True)
    ledger = _run(service, 8)
    verdict = verify.check(service.books(), ledger.granted, ledger.deleted)
    assert not verdict.ok
    assert set(verdict.lost) == set(ledger.granted) - ledger.deleted
    assert verdict.usages["VCPU"][1] == 0
    assert verdict.summary().startswith("FAILED:")


def test_a_service_granting_past_capacity_fails_the_verification():
    service = FakePlacement(overcommit=True)
    ledger = _run(service, 60)
    verdict = verify.check(service.books(), ledger.granted, ledger.deleted)
    assert not verdict.ok and verdict.over_capacity
    assert not verdict.lost and not verdict.extra


def test_deleted_consumers_still_held_fail_the_verification():
    service = FakePlacement(keep_deleted=True)
    ledger = _run(service, 20)
    assert ledger.deleted
    verdict = verify.check(service.books(), ledger.granted, ledger.deleted)
    assert set(verdict.extra) == ledger.deleted
    assert "consumers held that should not be" in verdict.summary()


def test_a_failed_delete_keeps_the_consumer_in_the_books():
    class NoDeletes(FakePlacement):
        def request(self, method, path, body=None):
            if method == "DELETE":
                return 500, b"{}", 0.001
            return super().request(method, path, body)

    service = NoDeletes()
    ledger = _run(service, 12)
    assert ledger.errors and not ledger.deleted
    assert verify.check(service.books(), ledger.granted, ledger.deleted).ok


def test_percentiles():
    assert mix.percentiles([]) is None
    assert mix.percentiles([0.5]) == (0.5, 0.5, 0.5)
    p50, p95, p99 = mix.percentiles([i / 1000 for i in range(1, 101)])
    assert p50 == pytest.approx(0.0505) and p95 == pytest.approx(0.09505)
    assert p99 == pytest.approx(0.09901)


def test_scheduling_worlds_disable_hosts_and_flavors_ask_as_nova_does():
    world = flavors.world("numa", 100)
    disabled = [t for t in world.trees if "COMPUTE_STATUS_DISABLED" in t[0].traits]
    assert len(disabled) == 2
    assert all(f.path.endswith("&root_required=!COMPUTE_STATUS_DISABLED&limit=1000")
               for menu in flavors.FLAVORS.values() for f in menu)
    assert all(len(menu) == 8 for menu in flavors.FLAVORS.values())
    with pytest.raises(ValueError):
        flavors.world("wide", 10)


def test_fill_rows_are_one_consistent_world():
    world = flavors.world("numa", 20)
    rows = fill.rows(world, 3)
    providers = rows.tables["resource_providers"]
    assert len(providers) == world.providers == 180
    ids = {p["id"] for p in providers}
    for p in providers:
        assert p["root_provider_id"] in ids
        assert p["parent_provider_id"] is None or p["parent_provider_id"] < p["id"]
    assert rows.count("consumers") == 60
    # Every consumer holds VCPU, MEMORY_MB and DISK_GB, within capacity.
    assert rows.count("allocations") == 180
    capacity = {(i["resource_provider_id"], i["resource_class_id"]):
                i["total"] * i["allocation_ratio"] for i in rows.tables["inventories"]}
    used: dict = {}
    for a in rows.tables["allocations"]:
        key = (a["resource_provider_id"], a["resource_class_id"])
        used[key] = used.get(key, 0) + a["used"]
    assert all(n <= capacity[key] for key, n in used.items())
    assert fill.rows(world, 3).tables == rows.tables  # the same world, the same rows


def test_the_meter_counts_cpu_spent_during_the_round():
    meter = cpu.Meter(lambda: [os.getpid()], interval=0.05)
    meter.start()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        random.random()
    assert 0.25 <= meter.stop() <= 5.0
    assert cpu.process_seconds(2 ** 22 + 12345) is None


@pytest.mark.skipif(not backends.PG_URL, reason="needs ALLOTMENT_TEST_PG_URL")
def test_the_database_meter_counts_the_backends_of_that_database_only():
    import sqlalchemy as sa

    from allotment.storage import db as db_mod

    busy = "SELECT count(*) FROM generate_series(1, 4000000)"
    url, other = (pg.create_database(backends.PG_URL, prefix="meter_test") for _ in range(2))
    engines = [sa.create_engine(db_mod.normalise_url(u)) for u in (url, other)]
    try:
        meter = cpu.Meter(cpu.pg_backends(url), interval=0.05)
        meter.start()
        with engines[1].connect() as conn:  # another database's work is not counted
            conn.execute(sa.text(busy))
        idle = meter.stop()
        meter = cpu.Meter(cpu.pg_backends(url), interval=0.05)
        meter.start()
        with engines[0].connect() as conn:
            conn.execute(sa.text(busy))
        spent = meter.stop()
        assert spent > 0.1 and idle < spent / 4
    finally:
        for engine in engines:
            engine.dispose()
        for u in (url, other):
            pg.drop_database(u)
