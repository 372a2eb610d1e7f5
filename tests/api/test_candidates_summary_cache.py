"""Encoded provider summaries are reused, and do not pile up as usage moves.

Every claim gives the provider's summary a new revision; the cache of
encoded summaries must replace the old encoding, not keep it beside the new
one (a worker serving claims and candidates for hours would otherwise grow
by the size of a summary per claim).
"""

from __future__ import annotations

import uuid

from allotment.api import allocation_candidates as candidates_api


def _claim(api, rp: str) -> str:
    consumer = str(uuid.uuid4())
    resp = api.put(f"/allocations/{consumer}", version="1.36", json={
        "allocations": {rp: {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None})
    assert resp.status == 204, resp
    return consumer


def test_summaries_follow_usage_and_the_cache_stays_one_per_provider(api):
    rps = []
    for i in range(3):
        rp = api.post("/resource_providers", json={"name": f"cache-{i}"}).json["uuid"]
        assert api.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 100}}}).status == 200
        rps.append(rp)
    candidates_api._ENCODED.clear()
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
    assert len(candidates_api._ENCODED) == len(rps) * 2
