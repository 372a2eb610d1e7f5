"""``ignore_consumers`` (docs/extensions/ignore-consumers.md) over HTTP: the
candidates of the world without some consumers' allocations."""

from __future__ import annotations

from allotment.server.app import create_app
from tests.api.candidate_helpers import World
from tests.api.test_resource_providers import new_uuid
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

EXT = {"Allotment-Extensions": "1"}


def cloud(api) -> tuple[World, dict[str, str]]:
    """cn1 full (two consumers), cn2 half full, a pool shared with both."""
    w = World(api)
    w.add("cn1", inv={"VCPU": 4, "MEMORY_MB": 4096}, aggs=["A"])
    w.add("cn2", inv={"VCPU": 4}, aggs=["A"])
    w.add("pool", inv={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggs=["A"])
    vms = {"vm1": w.use("cn1", {"VCPU": 3}), "vm2": w.use("cn1", {"VCPU": 1}),
           "vm3": w.use("cn2", {"VCPU": 2}), "vm4": w.use("pool", {"DISK_GB": 90})}
    return w, vms


def ignoring(api, query: str, *consumers: str, version: str = "latest", status: int = 200):
    resp = api.get(f"/allocation_candidates?{query}&ignore_consumers=in:{','.join(consumers)}",
                   headers=EXT, version=version)
    assert resp.status == status, resp
    return resp


def by_host(w: World, body: dict) -> dict[str, list[str]]:
    """Host name -> the consumers its candidate displaces."""
    return {next(w.name(u) for u in ar["allocations"] if w.name(u) != "pool"):
            ar["displaces"] for ar in body["allocation_requests"]}


def test_candidates_of_the_world_without_the_consumers(api):
    w, vms = cloud(api)
    assert w.candidates("resources=VCPU:2") == [frozenset({("cn2", "VCPU", 2)})]
    body = ignoring(api, "resources=VCPU:2", vms["vm1"]).json
    # Without vm1 cn1 has 3 free: it fits there, because vm1 is gone.
    assert by_host(w, body) == {"cn1": [vms["vm1"]], "cn2": []}
    # Summaries describe that world.
    summaries = body["provider_summaries"]
    assert summaries[w.uuids["cn1"]]["resources"]["VCPU"] == {"capacity": 4, "used": 1}
    assert summaries[w.uuids["cn2"]]["resources"]["VCPU"] == {"capacity": 4, "used": 2}


def test_displaces_only_consumers_in_the_way(api):
    w, vms = cloud(api)
    # cn2 fits 2 VCPU whether vm3 is there or not: nothing displaced.
    body = ignoring(api, "resources=VCPU:2", vms["vm3"], vms["vm2"]).json
    # Without vm2 cn1 has 1 free: still no room for 2, so no candidate.
    assert by_host(w, body) == {"cn2": []}
    body = ignoring(api, "resources=VCPU:4", vms["vm1"], vms["vm2"], vms["vm3"]).json
    assert by_host(w, body) == {"cn1": sorted([vms["vm1"], vms["vm2"]]), "cn2": [vms["vm3"]]}


def test_sharing_providers_count(api):
    w, vms = cloud(api)
    assert w.candidates("resources=VCPU:1,DISK_GB:20") == []
    body = ignoring(api, "resources=VCPU:1,DISK_GB:20", vms["vm4"]).json
    assert by_host(w, body) == {"cn2": [vms["vm4"]]}


def test_the_world_itself_is_unchanged(api):
    w, vms = cloud(api)
    ignoring(api, "resources=VCPU:2", vms["vm1"])
    # The same question without the extension, asked after, sees vm1 again.
    assert w.candidates("resources=VCPU:2") == [frozenset({("cn2", "VCPU", 2)})]
    usages = api.get(f"/resource_providers/{w.uuids['cn1']}/usages").json["usages"]
    assert usages["VCPU"] == 4
    resp = api.get("/allocation_candidates?resources=VCPU:2", headers=EXT)
    assert "displaces" not in resp.json["allocation_requests"][0]


def test_any_spelling_of_a_uuid(api):
    w, vms = cloud(api)
    body = ignoring(api, "resources=VCPU:2", vms["vm1"].upper().replace("-", "")).json
    assert by_host(w, body) == {"cn1": [vms["vm1"]], "cn2": []}


def test_unknown_consumers_are_named(api):
    _, vms = cloud(api)
    ghost1, ghost2 = sorted([new_uuid(), new_uuid()])
    resp = ignoring(api, "resources=VCPU:1", vms["vm1"], ghost2, ghost1, status=400)
    error = resp.json["errors"][0]
    assert error["code"] == "allotment.consumer.unknown"
    assert f"{ghost1}, {ghost2}" in error["detail"]
    assert vms["vm1"] not in error["detail"]


def test_bad_values_are_400(api):
    cloud(api)
    for value in ("not-a-uuid", f"{new_uuid()}", "in:", f"in:{new_uuid()},x"):
        resp = api.get(f"/allocation_candidates?resources=VCPU:1&ignore_consumers={value}",
                       headers=EXT)
        assert resp.status == 400, value
        assert resp.json["errors"][0]["code"] == "placement.query.bad_value"


def test_without_the_header_it_is_an_unknown_parameter(api):
    _, vms = cloud(api)
    resp = api.get(f"/allocation_candidates?resources=VCPU:1&ignore_consumers=in:{vms['vm1']}")
    assert resp.status == 400
    assert "Invalid query string parameters" in resp.json["errors"][0]["detail"]
    assert "ignore_consumers" in resp.json["errors"][0]["detail"]
    # With the header but below 1.36 the header itself is refused.
    resp = ignoring(api, "resources=VCPU:1", vms["vm1"], version="1.35", status=400)


def test_needs_the_right_to_read_allocations(database_url, db, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:allocations:list": "!"\n')
    api = Client(create_app(make_conf(database_url, oslo_policy={"policy_file": str(policy)}),
                            db=db))
    _, vms = cloud(api)
    assert api.get("/allocation_candidates?resources=VCPU:1", headers=EXT).status == 200
    ignoring(api, "resources=VCPU:1", vms["vm1"], status=403)


def test_explain_and_headroom_see_that_world(api):
    w, vms = cloud(api)
    body = ignoring(api, "resources=VCPU:4&explain=true&headroom=true",
                    vms["vm1"], vms["vm2"]).json
    assert by_host(w, body) == {"cn1": sorted([vms["vm1"], vms["vm2"]])}
    hosts = {h["name"]: h["count"] for h in body["headroom"]["hosts"]}
    assert hosts == {"cn1": 1}
    explained = {t["root_provider_uuid"]: t for t in body["explanation"]["trees"]}
    assert w.uuids["cn1"] not in explained
    assert explained[w.uuids["cn2"]]["used"] == 2
    # The same count without the extension is the world's own.
    plain = api.get("/allocation_candidates?resources=VCPU:4&headroom=true", headers=EXT)
    assert plain.json["headroom"]["hosts"] == []
