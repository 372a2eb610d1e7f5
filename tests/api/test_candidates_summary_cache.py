"""Encoded provider summaries are reused, and do not pile up as usage moves.

Every claim gives the provider's summary a new revision; the cache of
encoded summaries must replace the old encoding, not keep it beside the new
one (a worker serving claims and candidates for hours would otherwise grow
by the size of a summary per claim).
"""

from __future__ import annotations

import uuid

from allotment.api import candidates_codec as candidates_api


def _claim(api, rp: str) -> str:
    consumer = str(uuid.uuid4())
    resp = api.put(f"/allocations/{consumer}", version="1.36", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None})
    assert resp.status == 204, resp
    return consumer


def _provider(api, name: str, inventories: dict, parent: str | None = None) -> str:
    body = {"name": name}
    if parent is not None:
        body["parent_provider_uuid"] = parent
    rp = api.post("/resource_providers", json=body).json["uuid"]
    assert api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0, "inventories": inventories}).status == 200
    return rp


def test_summaries_follow_usage_and_the_cache_stays_one_per_provider(app, api):
    rps = [_provider(api, f"cache-{i}", {"VCPU": {"total": 100}}) for i in range(3)]
    for step in range(40):
        rp = rps[step % 3]
        consumer = _claim(api, rp)
        if step % 2:
            assert api.delete(f"/allocations/{consumer}").status == 204
        for version in ("1.12", "1.29"):  # two shapes of summary
            body = api.get("/allocation_candidates?resources=VCPU:1",
                           version=version).json
            used = api.get(f"/resource_providers/{rp}/usages").json["usages"]["VCPU"]
            assert body["provider_summaries"][rp]["resources"]["VCPU"]["used"] == used
    with app.runtime.replica.current() as world:
        assert len(world.memo("encoded-summary")) == len(rps) * 2


def test_whole_trees_are_described_again_only_where_they_changed(api, monkeypatch):
    # Three hosts, each a root with disk and two NUMA nodes with VCPU: from
    # 1.29 every answer describes all nine providers.
    trees = []
    for h in range(3):
        root = _provider(api, f"tree-{h}", {"DISK_GB": {"total": 100}})
        nodes = [_provider(api, f"tree-{h}-numa-{n}", {"VCPU": {"total": 8}}, root)
                 for n in range(2)]
        trees.append((root, nodes))
    encoded = []
    real = candidates_api._encoded_summary
    monkeypatch.setattr(candidates_api, "_encoded_summary",
                        lambda kept, s, *a: encoded.append(s.uuid) or real(kept, s, *a))
    query = "/allocation_candidates?resources=VCPU:1,DISK_GB:1"

    def summaries() -> dict:
        del encoded[:]
        return api.get(query).json["provider_summaries"]

    first = summaries()
    assert len(first) == 9
    # Asked again: every tree as it was, nothing described again.
    assert summaries() == first and encoded == []
    # A claim on one NUMA node of the second host: that host alone.
    root, nodes = trees[1]
    _claim(api, nodes[0])
    after = summaries()
    assert sorted(encoded) == sorted([root, *nodes])
    assert after[nodes[0]]["resources"]["VCPU"]["used"] == 1
    assert {u: s for u, s in after.items() if u != nodes[0]} == {
        u: s for u, s in first.items() if u != nodes[0]}
    # A trait on the first host's root and a new child of the third host.
    root0 = trees[0][0]
    generation = api.get(f"/resource_providers/{root0}").json["generation"]
    assert api.put(f"/resource_providers/{root0}/traits", json={
        "resource_provider_generation": generation,
        "traits": ["HW_CPU_X86_AVX2"]}).status == 200
    child = api.post("/resource_providers", json={
        "name": "tree-2-gpu", "parent_provider_uuid": trees[2][0]}).json["uuid"]
    later = summaries()
    assert later[root0]["traits"] == ["HW_CPU_X86_AVX2"]
    assert later[child] == {"resources": {}, "traits": [],
                            "parent_provider_uuid": trees[2][0],
                            "root_provider_uuid": trees[2][0]}
    assert len(later) == 10 and trees[1][0] not in encoded
