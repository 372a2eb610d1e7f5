"""Provider summaries of a limited candidates answer before 1.29, in a
world with nested providers: every provider of the kept candidates' trees
that the unlimited answer uses, as upstream keeps them."""

from __future__ import annotations

HOSTS = ["aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"]


def _numa_hosts(api) -> dict[str, list[str]]:
    children = {}
    for host in HOSTS:
        assert api.post("/resource_providers", json={"name": host, "uuid": host}).status == 200
        children[host] = []
        for n in (1, 2):
            numa = f"{host[:-2]}{n}{host[-1]}"
            api.post("/resource_providers", json={
                "name": numa, "uuid": numa, "parent_provider_uuid": host})
            assert api.put(f"/resource_providers/{numa}/inventories", json={
                "resource_provider_generation": 0,
                "inventories": {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024}}}).status == 200
            children[host].append(numa)
    return children


def _used(body: dict) -> set[str]:
    return {rp for ar in body["allocation_requests"] for rp in ar["allocations"]}


def test_a_sibling_the_unlimited_answer_uses_is_summarised(api):
    children = _numa_hosts(api)
    body = api.get("/allocation_candidates?resources=VCPU:1&limit=1", version="1.26").json
    (kept,) = _used(body)
    host = next(h for h, numas in children.items() if kept in numas)
    assert sorted(body["provider_summaries"]) == children[host]


def test_granular_groups_at_1_27(api):
    children = _numa_hosts(api)
    body = api.get("/allocation_candidates?resources=MEMORY_MB:99&resources1=VCPU:4"
                   "&group_policy=none&limit=1", version="1.27").json
    used = _used(body)
    hosts = {h for h, numas in children.items() if used & set(numas)}
    assert sorted(body["provider_summaries"]) == sorted(n for h in hosts for n in children[h])


def test_a_sibling_no_candidate_uses_is_not(api):
    children = _numa_hosts(api)
    full = children[HOSTS[0]][1]
    api.put(f"/resource_providers/{full}/inventories", json={
        "resource_provider_generation": 1, "inventories": {"MEMORY_MB": {"total": 1024}}})
    body = api.get("/allocation_candidates?resources=VCPU:1&limit=2", version="1.26").json
    assert len(body["allocation_requests"]) == 2  # one per host
    others = [n for numas in children.values() for n in numas if n != full]
    assert sorted(body["provider_summaries"]) == sorted(others)


def test_without_nested_providers_only_the_kept_ones(api):
    for host in HOSTS:
        api.post("/resource_providers", json={"name": host, "uuid": host})
        api.put(f"/resource_providers/{host}/inventories", json={
            "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}})
    body = api.get("/allocation_candidates?resources=VCPU:1&limit=1", version="1.26").json
    assert sorted(body["provider_summaries"]) == sorted(_used(body))
