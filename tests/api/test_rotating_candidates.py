"""``[allotment] rotate_allocation_candidates``: limited answers begin at a
host that moves on with every write, so that schedulers asking one after
another are offered different first hosts; every answer is still a valid
one (the candidates of the whole answer, one per host before a second of
any, summaries of exactly their hosts), and a function of the world and
the request: two workers on one database, or one started afresh, give the
same bytes."""

from __future__ import annotations

import itertools
import json

import pytest

from allotment.engine import first_round
from allotment.server.app import create_app
from tests.api.candidate_helpers import World
from tests.api.test_candidate_rounds import DISABLED, cloud, random_answers_hold
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

FLAVOR = f"resources=VCPU:1,MEMORY_MB:512,DISK_GB:1&root_required=!{DISABLED}"


def rotating_api(database_url, db) -> Client:
    return Client(create_app(make_conf(
        database_url, allotment={"rotate_allocation_candidates": True}), db=db))


@pytest.mark.parametrize("block", [first_round.BLOCK, 2, 3])
def test_rotating_answers_hold_through_changes(database_url, db, monkeypatch, block):
    # Small blocks: rotated first rounds taken in blocks (engine.first_round).
    monkeypatch.setattr(first_round, "BLOCK", block)
    api = rotating_api(database_url, db)
    w = cloud(api)
    random_answers_hold(api, monkeypatch, rounds=2)
    held = w.use("numa-host1-numa0", {"VCPU": 3, "MEMORY_MB": 1024})
    w.set_traits("cn1", ["HW_CPU_X86_AVX2", DISABLED])
    w.set_inventory("numa-host0-numa1", {"VCPU": 1, "MEMORY_MB": 4096})
    random_answers_hold(api, monkeypatch, rounds=2)
    assert api.delete(f"/allocations/{held}").status == 204
    w.add("cn9", inv={"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 80})
    assert api.delete(f"/resource_providers/{w.uuids['cn0']}").status == 204
    random_answers_hold(api, monkeypatch, rounds=2)


def hosts(api, count: int) -> World:
    w = World(api)
    for h in range(count):
        w.add(f"host{h:02d}", inv={"VCPU": 64, "MEMORY_MB": 65536, "DISK_GB": 1000})
    return w


def first_hosts(api, w: World, claims: int) -> list[str]:
    """The first host of each of ``claims`` answers, each claimed before the next."""
    by_uuid = {u: name for name, u in w.uuids.items()}
    firsts = []
    for _ in range(claims):
        resp = api.get(f"/allocation_candidates?{FLAVOR}&limit=1000", version="1.39")
        assert resp.status == 200, resp
        first = resp.json["allocation_requests"][0]["allocations"]
        host = by_uuid[next(iter(first))]
        firsts.append(host)
        w.use(host, {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1})
    return firsts


def test_each_claim_moves_the_first_host(database_url, db):
    api = rotating_api(database_url, db)
    w = hosts(api, 12)
    firsts = first_hosts(api, w, 24)
    # Every claim moves a generation: the next answer begins at another host,
    # and over 24 claims every one of the 12 hosts comes first.
    assert all(a != b for a, b in itertools.pairwise(firsts))
    assert len(set(firsts)) == 12


def test_the_deterministic_order_begins_at_the_same_host(api):
    w = hosts(api, 12)
    # The first host in UUID order, claim after claim.
    assert len(set(first_hosts(api, w, 6))) == 1


def test_workers_on_one_database_give_the_same_answer(database_url, db):
    one, two = rotating_api(database_url, db), rotating_api(database_url, db)
    w = hosts(one, 9)
    path = f"/allocation_candidates?{FLAVOR}&limit=4"
    answers = []
    for n in range(6):
        w.use(f"host{n:02d}", {"VCPU": 1, "DISK_GB": 1})
        a, b = one.get(path, version="1.39"), two.get(path, version="1.39")
        assert a.status == b.status == 200
        assert a.text == b.text
        answers.append(a.text)
    # Another worker, its world read afresh from the database: the same again.
    assert rotating_api(database_url, db).get(path, version="1.39").text == answers[-1]
    assert len(set(answers)) == 6
    assert all(len(json.loads(a)["allocation_requests"]) == 4 for a in answers)
