"""Almost-valid writes never cause a 500 or a partial write.

Each example takes a valid allocation, reshaper or inventory body and
damages it a little (a value replaced by a huge, negative, wrong-typed or
unknown one, a key dropped or added), then checks that the answer is below
500 and, when it is a 4xx, that no usage, allocation or inventory changed.
Bodies that stay valid may succeed; the capacity invariant must hold either
way.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.allocation_helpers import SERVICE
from tests.api.test_resource_providers import PROJECT, USER, allocate, create

CONSUMER = "3c6f1a2e-8d4b-4f0e-9a7c-5b2d1e0f9a81"
ROOT, CHILD = "root", "child"

WEIRD = [0, -1, 2 ** 31, 2 ** 63, -(2 ** 63), 1.5, "1", None, True, [], {}, "x",
         "é" * 300, "VCPU", "CUSTOM_NOPE", "2290d4af-9e6e-400b-9d65-1ee01376f71a"]


def templates(root: str, child: str, root_gen: int, child_gen: int) -> list[tuple]:
    claim = {"allocations": {root: {"resources": {"VCPU": 1, "DISK_GB": 10}}},
             "project_id": PROJECT, "user_id": USER, "consumer_generation": None,
             "consumer_type": "INSTANCE"}
    return [
        ("PUT", f"/allocations/{CONSUMER}", "1.39", claim),
        ("PUT", f"/allocations/{CONSUMER}", "1.0", {"allocations": [
            {"resource_provider": {"uuid": root}, "resources": {"VCPU": 1}}]}),
        ("POST", "/allocations", "1.38", {CONSUMER: claim}),
        ("POST", "/reshaper", "1.38", {
            "inventories": {
                root: {"resource_provider_generation": root_gen,
                       "inventories": {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}}},
                child: {"resource_provider_generation": child_gen,
                        "inventories": {"VCPU": {"total": 4}}}},
            "allocations": {CONSUMER: {**claim, "allocations": {
                child: {"resources": {"VCPU": 1}}}}}}),
        ("PUT", f"/resource_providers/{root}/inventories", "1.39", {
            "resource_provider_generation": root_gen,
            "inventories": {"VCPU": {"total": 8, "reserved": 1, "allocation_ratio": 2.0},
                            "DISK_GB": {"total": 100, "step_size": 10}}}),
    ]


def damage(document, draw) -> object:
    """Replace, drop or add one thing somewhere in ``document``."""
    document = copy.deepcopy(document)
    containers = []

    def collect(node):
        if isinstance(node, dict | list):
            containers.append(node)
            for child in (node.values() if isinstance(node, dict) else node):
                collect(child)
    collect(document)
    target = draw(st.sampled_from(containers))
    keys = list(target) if isinstance(target, dict) else list(range(len(target)))
    action = draw(st.sampled_from(["replace", "drop", "add"] if keys else ["add"]))
    if action == "add" or not keys:
        if isinstance(target, dict):
            target[draw(st.sampled_from(["extra", "VCPU", "MEMORY_MB", CONSUMER]))] = \
                draw(st.sampled_from(WEIRD))
        else:
            target.append(draw(st.sampled_from(WEIRD)))
    elif action == "drop":
        del target[draw(st.sampled_from(keys))]
    else:
        target[draw(st.sampled_from(keys))] = draw(st.sampled_from(WEIRD))
    return document


def state(api, providers: list[str]) -> str:
    parts = [api.get(f"/allocations/{CONSUMER}").json]
    for rp in providers:
        parts.append(api.get(f"/resource_providers/{rp}/inventories").json)
        parts.append(api.get(f"/resource_providers/{rp}/usages").json)
    return json.dumps(parts, sort_keys=True)


def within_capacity(api, rp: str) -> bool:
    usages = api.get(f"/resource_providers/{rp}/usages").json["usages"]
    inventories = api.get(f"/resource_providers/{rp}/inventories").json["inventories"]
    return all(used <= int((inventories[rc]["total"] - inventories[rc]["reserved"])
                           * inventories[rc]["allocation_ratio"])
               for rc, used in usages.items() if used)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_writes(api, data):
    providers = api.get("/resource_providers").json["resource_providers"]
    by_name = {p["name"]: p for p in providers}
    if ROOT not in by_name:
        root = create(api, ROOT)
        child = create(api, CHILD, parent=root)
        api.put(f"/resource_providers/{root}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 8}, "DISK_GB": {"total": 100}}})
        allocate(api, root, {"VCPU": 2})
        providers = api.get("/resource_providers").json["resource_providers"]
        by_name = {p["name"]: p for p in providers}
    root, child = by_name[ROOT], by_name[CHILD]
    method, path, version, body = data.draw(st.sampled_from(templates(
        root["uuid"], child["uuid"], root["generation"], child["generation"])))
    document = damage(body, data.draw)
    before = state(api, [root["uuid"], child["uuid"]])
    fitted = within_capacity(api, root["uuid"]) and within_capacity(api, child["uuid"])
    resp = api.request(method, path, json=document, version=version, headers=SERVICE)
    assert resp.status < 500, (method, path, document, resp.text)
    if resp.status >= 400:
        assert state(api, [root["uuid"], child["uuid"]]) == before, (method, path, document)
    # An inventory write may leave usage above the new capacity (Placement
    # allows it, with a warning, so that a host can report what it really
    # has); an allocation write may never take a provider past it.
    if fitted and path.startswith("/allocations"):
        assert within_capacity(api, root["uuid"]) and within_capacity(api, child["uuid"]), (
            method, path, document)
