"""The world's one cache (world/cache.py): one budget over every kind of
thing requests keep, the largest kinds dropped first when it is passed,
and gone with its world when the world is read again."""

from __future__ import annotations

import uuid

from allotment.api import rendering
from allotment.world import cache as cache_mod
from allotment.world.cache import Cache
from allotment.world.sync import Replica


def test_past_the_budget_the_largest_sections_go_first(monkeypatch):
    monkeypatch.setattr(cache_mod, "BUDGET_BASE", 10)
    monkeypatch.setattr(cache_mod, "BUDGET_PER_PROVIDER", 1)
    providers = [0]
    cache = Cache(lambda: providers[0])
    small, big = cache.section("small"), cache.section("big")
    small.update((i, i) for i in range(3))
    big.update((i, i) for i in range(8))
    assert len(cache) == 11
    # Asking for any section checks the budget (10 + 1 per provider).
    assert cache.section("small") is small
    assert len(cache) == 3 and not big
    fresh = cache.section("big")
    assert fresh is not big and fresh == {}
    # The budget follows the world's size.
    providers[0] = 100
    fresh.update((i, i) for i in range(100))
    assert cache.section("small") is small and len(cache) == 103


def test_a_world_read_again_starts_with_an_empty_cache(db):
    replica = Replica(db)
    with replica.current() as world:
        world.memo("anything")["key"] = "made"
        assert len(world.cache) == 1
    replica.rebuild()
    with replica.current() as world:
        assert len(world.cache) == 0 and world.memo("anything") == {}


def _host(api, name: str) -> str:
    rp = api.post("/resource_providers", json={"name": name}).json["uuid"]
    assert api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}}}).status == 200
    return rp


def test_reused_candidates_are_encoded_once_and_kept_in_the_world(app, api, monkeypatch):
    hosts = sorted(_host(api, f"host-{i}") for i in range(3))
    encoded = []
    real = rendering.fragment
    monkeypatch.setattr(rendering, "fragment",
                        lambda body: encoded.append(body) or real(body))
    query = "/allocation_candidates?resources=VCPU:1"

    def requests(version: str) -> list:
        del encoded[:]
        return api.get(query, version=version).json["allocation_requests"]

    first = requests("1.34")
    # Summaries and allocation requests, each encoded once.
    assert len(encoded) == 6
    assert requests("1.34") == first and encoded == []
    # Another shape of allocation request is encoded anew.
    older = requests("1.12")
    assert [r["allocations"] for r in older] == [r["allocations"] for r in first]
    assert "mappings" not in older[0] and len(encoded) == 6
    # A claim changes one host: its candidate and summary are made again.
    consumer = str(uuid.uuid4())
    assert api.put(f"/allocations/{consumer}", version="1.36", json={
        "allocations": {hosts[1]: {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None}).status == 204
    assert requests("1.34") == first and len(encoded) == 2
    with app.runtime.replica.current() as world:
        for shape in ((True, True), (True, False)):
            kept = world.memo(("encoded-request", *shape))
            assert len(kept) >= 3
            assert all(cand.reused and key == id(cand) for key, (cand, _) in kept.items())
