"""``preempt=true`` keeps the preemptible consumers in the world between
requests (engine.whatif): every answer is still the one the database
gives at that moment, after writes of every kind."""

from __future__ import annotations

from tests.api.test_candidates_preempt import (  # noqa: F401 (fixture)
    EXT,
    Cloud,
    conf_overrides,
    evict_and_claim,
    hold,
)
from tests.api.test_resource_providers import new_uuid


def evicting(api, cloud, query: str = "resources=VCPU:3") -> dict:
    """Host name -> (victim names, their generations)."""
    resp = api.get(f"/allocation_candidates?{query}&preempt=true", headers=EXT)
    assert resp.status == 200, resp
    return {cloud.w.name(next(iter(ar["allocations"]))):
            (sorted(cloud.name(v["consumer_uuid"]) for v in ar["evicts"]),
             sorted(v["consumer_generation"] for v in ar["evicts"]))
            for ar in resp.json["allocation_requests"] if ar["evicts"]}


def test_new_and_removed_consumers_are_seen(api):
    cloud = Cloud(api)
    assert evicting(api, cloud)["cn1"] == (["spot-b"], [1])
    # vm2 goes from cn2 and a spot instance takes 6 of its 7: cn2 (7 used)
    # can now make room for 3.
    api.delete(f"/allocations/{cloud.c['vm2']}")
    cloud.c["spot-f"] = hold(api, cloud.w.uuids["cn2"], {"VCPU": 6}, "SPOT")
    found = evicting(api, cloud)
    assert found["cn2"] == (["spot-f"], [1])
    # spot-b goes: cn1 has 4 free and fits as it is.
    api.delete(f"/allocations/{cloud.c['spot-b']}")
    assert "cn1" not in evicting(api, cloud)


def test_a_victim_moved_elsewhere_carries_its_new_generation(api):
    cloud = Cloud(api)
    assert evicting(api, cloud)["cn4"] == (["batch-e"], [1])
    # batch-e gets memory on cn3 as well: its generation moves on, and it
    # frees more beyond the need, so batch-d is the better victim now.
    hold(api, cloud.w.uuids["cn4"], {"VCPU": 2, "MEMORY_MB": 1024}, "BATCH",
         consumer=cloud.c["batch-e"], generation=1)
    api.put(f"/allocations/{cloud.c['batch-e']}", json={
        "allocations": {cloud.w.uuids["cn4"]: {"resources": {"VCPU": 2, "MEMORY_MB": 1024}},
                        cloud.w.uuids["cn3"]: {"resources": {"MEMORY_MB": 4096}}},
        "project_id": "p", "user_id": "u", "consumer_generation": 2,
        "consumer_type": "BATCH"}, version="1.38")
    assert evicting(api, cloud)["cn4"] == (["batch-d"], [1])
    held = api.get(f"/allocations/{cloud.c['batch-e']}", version="1.38").json
    assert held["consumer_generation"] == 3
    # 7 VCPU on cn4 need both batch jobs gone; batch-e at its generation now.
    found = api.get("/allocation_candidates?resources=VCPU:7&preempt=true", headers=EXT)
    cn4 = next(ar for ar in found.json["allocation_requests"]
               if cloud.w.uuids["cn4"] in ar["allocations"])
    assert {v["consumer_uuid"]: v["consumer_generation"] for v in cn4["evicts"]} == {
        cloud.c["batch-d"]: 1, cloud.c["batch-e"]: 3}
    assert evict_and_claim(api, cn4, new_uuid()).status == 204


def test_a_consumer_rewritten_alike_is_never_evicted_by_mistake(api):
    cloud = Cloud(api)
    candidate = next(
        ar for ar in api.get("/allocation_candidates?resources=VCPU:3&preempt=true",
                             headers=EXT).json["allocation_requests"]
        if cloud.w.uuids["cn1"] in ar["allocations"])
    # spot-b becomes an instance, holding the very same: no usage moves.
    hold(api, cloud.w.uuids["cn1"], {"VCPU": 4}, "INSTANCE",
         consumer=cloud.c["spot-b"], generation=1)
    # An allocation write moves its providers' generations: the next
    # answer knows spot-b is no longer preemptible (cn1 then has only
    # spot-a, 2 VCPU, to give: not enough).
    assert "cn1" not in evicting(api, cloud)
    # The answer given before is refused, and nothing is written.
    new = new_uuid()
    assert evict_and_claim(api, candidate, new).status == 409
    assert api.get(f"/allocations/{new}").json["allocations"] == {}
    held = api.get(f"/allocations/{cloud.c['spot-b']}", version="1.38").json
    assert held["allocations"] and held["consumer_type"] == "INSTANCE"
