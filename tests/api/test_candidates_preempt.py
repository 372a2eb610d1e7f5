"""``preempt=true`` (docs/extensions/preempt.md) over HTTP: candidates that
fit once some preemptible consumers are removed, each with its eviction set,
and the one write that evicts them and claims their room."""

from __future__ import annotations

import threading

import pytest

from allotment.server.app import create_app
from tests.api.candidate_helpers import World
from tests.api.test_metrics import scrape
from tests.api.test_resource_providers import PROJECT, USER, new_uuid
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

EXT = {"Allotment-Extensions": "1"}


@pytest.fixture
def conf_overrides() -> dict:
    return {"allotment": {"preemptible_consumer_types": ["SPOT", "BATCH"]}}


def hold(api, provider: str, resources: dict, consumer_type: str,
         consumer: str | None = None, generation: int | None = None) -> str:
    consumer = consumer or new_uuid()
    resp = api.put(f"/allocations/{consumer}", json={
        "allocations": {provider: {"resources": resources}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": generation,
        "consumer_type": consumer_type}, version="1.38")
    assert resp.status == 204, resp
    return consumer


class Cloud:
    """Four hosts; the consumers on them by name."""

    def __init__(self, api) -> None:
        w = self.w = World(api)
        for name in ("cn1", "cn2", "cn3", "cn4"):
            w.add(name, inv={"VCPU": 8, "MEMORY_MB": 8192})
        u = w.uuids
        self.c = {
            # cn1: full; spot-b alone frees enough for 3, spot-a does not.
            "spot-a": hold(api, u["cn1"], {"VCPU": 2}, "SPOT"),
            "spot-b": hold(api, u["cn1"], {"VCPU": 4}, "SPOT"),
            "vm1": hold(api, u["cn1"], {"VCPU": 2}, "INSTANCE"),
            # cn2: 1 free; the instance there cannot be preempted.
            "vm2": hold(api, u["cn2"], {"VCPU": 7}, "INSTANCE"),
            # cn3: room for 3 as it is.
            "spot-c": hold(api, u["cn3"], {"VCPU": 5}, "SPOT"),
            # cn4: 1 free; either batch job frees enough: batch-e frees
            # 2/8 VCPU + 1024/8192 MEMORY_MB beyond the need (3/8),
            # batch-d 3/8 VCPU: batch-e is freeing less.
            "batch-d": hold(api, u["cn4"], {"VCPU": 5}, "BATCH"),
            "batch-e": hold(api, u["cn4"], {"VCPU": 2, "MEMORY_MB": 1024}, "BATCH"),
        }

    def name(self, uuid: str) -> str:
        return {u: n for n, u in self.c.items()}[uuid]

    def answer(self, query: str, version: str = "latest", status: int = 200) -> list:
        resp = self.w.api.get(f"/allocation_candidates?{query}&preempt=true",
                              headers=EXT, version=version)
        assert resp.status == status, resp
        return [(self.w.name(next(iter(ar["allocations"]))),
                 sorted(self.name(v["consumer_uuid"]) for v in ar["evicts"]))
                for ar in resp.json["allocation_requests"]] if status == 200 else resp


def fits_first(found: list) -> list:
    """``found`` with those needing eviction sorted (the search visits
    hosts by UUID, random here), after checking they come last."""
    free = [f for f in found if not f[1]]
    assert found[:len(free)] == free
    return free + sorted(found[len(free):])


def test_eviction_sets(api):
    cloud = Cloud(api)
    assert fits_first(cloud.answer("resources=VCPU:3")) == [
        ("cn3", []), ("cn1", ["spot-b"]), ("cn4", ["batch-e"])]
    # Two consumers needed where one does not suffice.
    assert fits_first(cloud.answer("resources=VCPU:6")) == [
        ("cn1", ["spot-a", "spot-b"]), ("cn3", ["spot-c"]), ("cn4", ["batch-d"])]


def test_victims_say_who_they_are(api):
    cloud = Cloud(api)
    victim = cn1_candidate(api, cloud)["evicts"][0]
    assert victim == {"consumer_uuid": cloud.c["spot-b"], "consumer_generation": 1,
                      "project_id": PROJECT, "user_id": USER, "consumer_type": "SPOT"}


def test_limit_counts_every_candidate(api):
    cloud = Cloud(api)
    assert cloud.answer("resources=VCPU:3&limit=1") == [("cn3", [])]
    two = cloud.answer("resources=VCPU:3&limit=2")
    assert two[0] == ("cn3", []) and two[1] in (("cn1", ["spot-b"]), ("cn4", ["batch-e"]))


def test_explain_says_whether_preemption_would_help(api):
    cloud = Cloud(api)
    resp = api.get("/allocation_candidates?resources=VCPU:7&preempt=true&explain=true",
                   headers=EXT)
    helps = {cloud.w.name(t["root_provider_uuid"]): t["preemption_helps"]
             for t in resp.json["explanation"]["trees"]}
    # cn1 would have 6 free without spot-a and spot-b; cn2's instance stays.
    assert helps == {"cn1": False, "cn2": False, "cn3": True, "cn4": True}
    # Without preempt, explain says nothing of it.
    resp = api.get("/allocation_candidates?resources=VCPU:7&explain=true", headers=EXT)
    assert all("preemption_helps" not in t for t in resp.json["explanation"]["trees"])


def test_explain_when_nothing_can_be_searched(api):
    cloud = Cloud(api)
    # No host has 9 VCPU, with or without preemption: Placement gives up
    # before searching, and every tree says preemption would not help.
    resp = api.get("/allocation_candidates?resources=VCPU:9&preempt=true&explain=true",
                   headers=EXT)
    assert resp.json["allocation_requests"] == []
    trees = resp.json["explanation"]["trees"]
    assert {cloud.w.name(t["root_provider_uuid"]): t["preemption_helps"] for t in trees} == {
        "cn1": False, "cn2": False, "cn3": False, "cn4": False}


def test_headroom_counts_also_without_preemptible_consumers(api):
    cloud = Cloud(api)

    def counts(room: dict) -> tuple[int, dict]:
        return room["total"], {cloud.w.name(h["uuid"]): h["count"] for h in room["hosts"]}

    resp = api.get("/allocation_candidates?resources=VCPU:2&preempt=true&headroom=true",
                   headers=EXT)
    room = resp.json["headroom"]
    # As things are only cn3 has room (3 free).
    assert counts(room) == (1, {"cn3": 1})
    # Without every preemptible consumer: cn1 6 free, cn3 and cn4 8; vm2
    # leaves 1 on cn2.
    assert counts(room["with_preemption"]) == (11, {"cn1": 3, "cn3": 4, "cn4": 4})
    assert room["with_preemption"]["largest"]["VCPU"] == 8
    assert "with_preemption" not in room["with_preemption"]
    # Without preempt, headroom says nothing of it.
    resp = api.get("/allocation_candidates?resources=VCPU:2&headroom=true", headers=EXT)
    assert "with_preemption" not in resp.json["headroom"]
    # With ignored consumers too: vm2 ignored frees cn2 in both counts.
    resp = api.get("/allocation_candidates?resources=VCPU:2&preempt=true&headroom=true"
                   f"&ignore_consumers=in:{cloud.c['vm2']}", headers=EXT)
    room = resp.json["headroom"]
    assert counts(room) == (5, {"cn2": 4, "cn3": 1})
    assert counts(room["with_preemption"]) == (15, {"cn1": 3, "cn2": 4, "cn3": 4, "cn4": 4})


def test_without_preempt_nothing_changes(api):
    cloud = Cloud(api)
    assert cloud.w.candidates("resources=VCPU:3") == [frozenset({("cn3", "VCPU", 3)})]
    resp = api.get("/allocation_candidates?resources=VCPU:3&preempt=false", headers=EXT)
    assert "evicts" not in resp.json["allocation_requests"][0]


def test_no_preemptible_types_means_no_eviction(database_url, db):
    api = Client(create_app(make_conf(database_url), db=db))
    cloud = Cloud(api)
    assert cloud.answer("resources=VCPU:3") == [("cn3", [])]


def test_refusals(api):
    Cloud(api)
    resp = api.get("/allocation_candidates?resources=VCPU:3&preempt=maybe", headers=EXT)
    assert resp.status == 400
    assert resp.json["errors"][0]["code"] == "placement.query.bad_value"
    # Below 1.38 (no consumer types) and without the header, it is unknown.
    for version, headers in (("1.37", EXT), ("latest", {})):
        resp = api.get("/allocation_candidates?resources=VCPU:3&preempt=true",
                       headers=headers, version=version)
        assert resp.status == 400
        assert "Invalid query string parameters" in resp.json["errors"][0]["detail"]


def test_needs_the_right_to_read_allocations(database_url, db, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:allocations:list": "!"\n')
    api = Client(create_app(make_conf(
        database_url, oslo_policy={"policy_file": str(policy)},
        allotment={"preemptible_consumer_types": ["SPOT"]}), db=db))
    Cloud(api)
    resp = api.get("/allocation_candidates?resources=VCPU:3&preempt=true", headers=EXT)
    assert resp.status == 403


def test_with_ignore_consumers(api):
    cloud = Cloud(api)
    # Without vm2, cn2 fits as it is; an ignored consumer is never a victim.
    resp = api.get(f"/allocation_candidates?resources=VCPU:6&preempt=true"
                   f"&ignore_consumers=in:{cloud.c['vm2']},{cloud.c['spot-c']}", headers=EXT)
    found = [(cloud.w.name(next(iter(ar["allocations"]))),
              sorted(cloud.name(v["consumer_uuid"]) for v in ar["evicts"]),
              [cloud.name(c) for c in ar["displaces"]])
             for ar in resp.json["allocation_requests"]]
    assert sorted(found[:2]) == [("cn2", [], ["vm2"]), ("cn3", [], ["spot-c"])]
    assert sorted(found[2:]) == [("cn1", ["spot-a", "spot-b"], []), ("cn4", ["batch-d"], [])]


# -- evict and claim in one write -----------------------------------------------

def evict_and_claim(api, candidate: dict, consumer: str):
    """One POST /allocations: the victims' allocations emptied at the
    generations the answer gave, the new consumer's written."""
    body = {v["consumer_uuid"]: {"allocations": {}, "project_id": v["project_id"],
                                 "user_id": v["user_id"],
                                 "consumer_generation": v["consumer_generation"],
                                 "consumer_type": v["consumer_type"]}
            for v in candidate["evicts"]}
    body[consumer] = {"allocations": candidate["allocations"], "project_id": PROJECT,
                      "user_id": USER, "consumer_generation": None,
                      "consumer_type": "INSTANCE"}
    return api.post("/allocations", json=body, version="1.38")


def cn1_candidate(api, cloud) -> dict:
    resp = api.get("/allocation_candidates?resources=VCPU:3&preempt=true", headers=EXT)
    return next(ar for ar in resp.json["allocation_requests"]
                if cloud.w.uuids["cn1"] in ar["allocations"])


def usage(api, cloud, host: str) -> int:
    return api.get(f"/resource_providers/{cloud.w.uuids[host]}/usages").json["usages"]["VCPU"]


def test_evict_and_claim(api):
    cloud = Cloud(api)
    new = new_uuid()
    assert evict_and_claim(api, cn1_candidate(api, cloud), new).status == 204
    assert api.get(f"/allocations/{cloud.c['spot-b']}").json["allocations"] == {}
    held = api.get(f"/allocations/{new}").json["allocations"]
    assert {p: a["resources"] for p, a in held.items()} == {cloud.w.uuids["cn1"]: {"VCPU": 3}}
    assert usage(api, cloud, "cn1") == 2 + 2 + 3


def test_a_victim_changed_meanwhile_writes_nothing(api):
    cloud = Cloud(api)
    candidate = cn1_candidate(api, cloud)
    # spot-b shrinks meanwhile: its generation moves on.
    hold(api, cloud.w.uuids["cn1"], {"VCPU": 3}, "SPOT", consumer=cloud.c["spot-b"], generation=1)
    new = new_uuid()
    resp = evict_and_claim(api, candidate, new)
    assert resp.status == 409
    assert resp.json["errors"][0]["code"] == "placement.concurrent_update"
    assert api.get(f"/allocations/{new}").json["allocations"] == {}
    assert api.get(f"/allocations/{cloud.c['spot-b']}").json["allocations"] != {}
    assert usage(api, cloud, "cn1") == 2 + 3 + 2


def test_two_schedulers_race_for_the_same_victims(api):
    cloud = Cloud(api)
    # Both read the same answer before either writes.
    first, second = cn1_candidate(api, cloud), cn1_candidate(api, cloud)
    a, b = new_uuid(), new_uuid()
    results = [evict_and_claim(api, first, a).status, evict_and_claim(api, second, b).status]
    assert results == [204, 409]
    assert api.get(f"/allocations/{b}").json["allocations"] == {}
    assert usage(api, cloud, "cn1") == 2 + 2 + 3 <= 8
    # The loser asks again: on cn1 (7 of 8 used) only spot-a is left to go.
    assert ("cn1", ["spot-a"]) in cloud.answer("resources=VCPU:3")


def test_two_schedulers_write_at_once(api):
    cloud = Cloud(api)
    answers = [cn1_candidate(api, cloud), cn1_candidate(api, cloud)]
    consumers = [new_uuid(), new_uuid()]
    start = threading.Barrier(2)
    statuses: dict[str, int] = {}

    def scheduler(k: int) -> None:
        start.wait()
        statuses[consumers[k]] = evict_and_claim(api, answers[k], consumers[k]).status

    threads = [threading.Thread(target=scheduler, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses.values()) == [204, 409]
    winner = next(c for c, s in statuses.items() if s == 204)
    loser = next(c for c, s in statuses.items() if s == 409)
    assert api.get(f"/allocations/{winner}").json["allocations"]
    assert api.get(f"/allocations/{loser}").json["allocations"] == {}
    assert usage(api, cloud, "cn1") == 2 + 2 + 3


def test_metrics_say_what_preemptible_consumers_hold(api):
    Cloud(api)
    found = scrape(api)
    held = {s.labels["resourcetype"]: s.value for s in found["allotment_preemptible_usage"]}
    # spot-a 2, spot-b 4, spot-c 5, batch-d 5, batch-e 2 and 1024 MB.
    assert held == {"VCPU": 18, "MEMORY_MB": 1024}


def test_no_preemptible_usage_without_preemptible_types(database_url, db):
    api = Client(create_app(make_conf(database_url), db=db))
    Cloud(api)
    assert "allotment_preemptible_usage" not in scrape(api)
