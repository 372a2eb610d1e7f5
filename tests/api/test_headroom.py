"""The headroom extension over HTTP, the CLI's `capacity` and the flavor
gauges on /metrics, on one small cloud worked out by hand: two hosts sharing
a 30 GB pool, a host with its own disk, a host with two NUMA nodes."""

from __future__ import annotations

from allotment.server.app import create_app
from tests.api.candidate_helpers import World
from tests.api.test_metrics import scrape, value
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

EXT = {"Allotment-Extensions": "1"}


def cloud(api) -> World:
    w = World(api)
    w.add("cn1", inv={"VCPU": 8, "MEMORY_MB": 4096}, aggs=["A"])
    w.use("cn1", {"VCPU": 2})
    w.add("cn2", inv={"VCPU": 4}, aggs=["A"])
    w.add("pool", inv={"DISK_GB": 30}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggs=["A"])
    w.add("cn3", inv={"VCPU": 16, "DISK_GB": 100}, aggs=["B"])
    w.add("numa-host", inv={"DISK_GB": 10})
    w.add("numa0", parent="numa-host", inv={"VCPU": 3})
    w.add("numa1", parent="numa-host", inv={"VCPU": 5})
    return w


def headroom(api, query: str) -> dict:
    resp = api.get(f"/allocation_candidates?{query}&headroom=true&limit=1", headers=EXT)
    assert resp.status == 200, resp
    return resp.json["headroom"]


def test_counts_by_placing(api):
    w = cloud(api)
    room = headroom(api, "resources=VCPU:2,DISK_GB:10")
    hosts = {h["name"]: h["count"] for h in room["hosts"]}
    # cn1: 6 VCPU free, 30 GB of pool -> 3; cn2: 4 VCPU -> 2; cn3: 8;
    # numa-host: 10 GB of its own disk -> 1 (VCPU 2 on either node).
    assert hosts == {"cn1": 3, "cn2": 2, "cn3": 8, "numa-host": 1}
    # cn1 and cn2 share the pool: 3 between them, not 5.
    assert room["total"] == 3 + 8 + 1
    assert room["aggregates"] == {w.aggs["A"]: 3, w.aggs["B"]: 8}
    assert room["largest"] == {"VCPU": 16, "DISK_GB": 100, "MEMORY_MB": 4096}


def test_granular_groups_count_per_provider(api):
    cloud(api)
    # Two VCPU from one NUMA node each time: 1 fits on numa0 (3), 2 on numa1 (5).
    room = headroom(api, "resources_N=VCPU:2&required_N=!HW_CPU_X86_AVX2&resources=DISK_GB:1"
                         "&group_policy=none")
    hosts = {h["name"]: h["count"] for h in room["hosts"]}
    assert hosts["numa-host"] == 3


def test_follows_usage(api):
    w = cloud(api)
    w.use("cn3", {"VCPU": 10})
    room = headroom(api, "resources=VCPU:2,DISK_GB:10")
    assert {h["name"]: h["count"] for h in room["hosts"]}["cn3"] == 3


def test_needs_the_extension_header(api):
    cloud(api)
    resp = api.get("/allocation_candidates?resources=VCPU:1&headroom=true")
    assert resp.status == 400
    resp = api.get("/allocation_candidates?resources=VCPU:1&headroom=maybe", headers=EXT)
    assert resp.status == 400
    resp = api.get("/allocation_candidates?resources=VCPU:1", headers=EXT)
    assert "headroom" not in resp.json


def test_flavor_gauges(database_url, db):
    conf = make_conf(database_url, allotment={
        "capacity_flavors": ["small=resources=VCPU:2,DISK_GB:10",
                             "big=resources=VCPU:16", "broken=resources=NOPE"],
        "capacity_private_flavors": ["big"],
        "capacity_metrics_per_host": True})
    api = Client(create_app(conf, db=db))
    w = cloud(api)
    found = scrape(api)
    name = "openstack_free_capacity_by_flavor_total"
    assert value(found, name, flavor_name="small", public="True") == 12
    assert value(found, name, flavor_name="big", public="False") == 1
    assert not [s for s in found[name] if s.labels["flavor_name"] == "broken"]
    per_host = "openstack_free_capacity_hypervisor_by_flavor"
    assert value(found, per_host, hypervisor="cn1", flavor_name="small") == 3
    assert {s.labels["az_aggregate"] for s in found[per_host]} == {""}
    assert value(found, "allotment_free_capacity_by_flavor_aggregate",
                 flavor_name="small", aggregate=w.aggs["A"]) == 3
    assert value(found, "allotment_largest_free_amount", resourcetype="VCPU") == 16


def test_counts_are_kept_and_only_changed_trees_counted_again(app, api, monkeypatch):
    from allotment.api.candidates_query import parse_allocation_candidates_query
    from allotment.engine import headroom as engine
    from allotment.service import allocation_candidates as service

    w = cloud(api)
    request = parse_allocation_candidates_query([("resources", "VCPU:2,DISK_GB:10")],
                                                (1, 39))
    replica = app.runtime.replica
    first = service.compute_many(replica, {"": request})[""]
    searched = []
    search = engine._candidates
    monkeypatch.setattr(engine, "_candidates",
                        lambda plan, places, r: searched.append(r) or search(plan, places, r))
    assert service.compute_many(replica, {"": request})[""] == first
    assert searched == []  # nothing changed: the kept count is the answer
    w.use("cn3", {"VCPU": 4})
    after = service.compute_many(replica, {"": request})[""]
    assert len(searched) == 1  # cn3's tree alone
    assert {h.name: h.count for h in after.hosts}["cn3"] == 6
    assert after.total == first.total - 2
    with replica.current() as world:
        world.memo(("headroom", repr(request))).clear()
    assert service.compute_many(replica, {"": request})[""] == after  # counted afresh: the same
