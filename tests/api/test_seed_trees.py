"""The provider trees drawn in the seed documents, built through the API.

Each environment is written down as drawn (names, parents, inventories,
traits, aggregates), built with the provider endpoints only, and then read
back: every tree through GET /resource_providers?in_tree=..., every
provider's inventory, traits and aggregates through their own endpoints.
Names that are not standard resource classes or traits are created as
CUSTOM_ ones, as an operator would.
"""

from __future__ import annotations

import os_resource_classes
import os_traits
import pytest

from tests.api.test_resource_providers import create, new_uuid

AGG = {"aggA": new_uuid(), "aggB": new_uuid()}
SHARES = "MISC_SHARES_VIA_AGGREGATE"


def P(parent=None, inv=None, traits=(), aggs=()):
    return {"parent": parent, "inv": inv or {}, "traits": list(traits), "aggs": list(aggs)}


ENVIRONMENTS = {
    # provider-tree.rst: sharing providers
    "sharing": {
        "SS1": P(inv={"DISK_GB": 1000}, traits=[SHARES], aggs=["aggA"]),
        "SS2": P(inv={"DISK_GB": 1000}, traits=[SHARES]),
        "CN1": P(inv={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000}, aggs=["aggA"]),
        "CN2": P(inv={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000}),
    },
    # provider-tree.rst: filtering by aggregate
    "aggregates": {
        "SS1": P(inv={"DISK_GB": 1000}, traits=[SHARES], aggs=["aggA"]),
        "CN1": P(inv={"MEMORY_MB": 1024, "DISK_GB": 1000}, aggs=["aggA", "aggB"]),
        "NUMA1_1": P("CN1", {"VCPU": 8}),
        "NUMA1_2": P("CN1", {"VCPU": 8}),
        "CN2": P(inv={"MEMORY_MB": 1024, "DISK_GB": 1000}, aggs=["aggA"]),
        "NUMA2_1": P("CN2", {"VCPU": 8}, aggs=["aggB"]),
        "NUMA2_2": P("CN2", {"VCPU": 8}),
    },
    # provider-tree.rst: filtering by traits
    "nics": {
        "CN1": P(inv={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000}),
        "NIC1_1": P("CN1", {"SRIOV_NET_VF": 8}, traits=["HW_NIC_ACCEL_SSL"]),
        "NIC1_2": P("CN1", {"SRIOV_NET_VF": 8}),
    },
    # provider-tree.rst: filtering by tree
    "in_tree": {
        "SS1": P(inv={"DISK_GB": 1000}, traits=[SHARES], aggs=["aggA"]),
        "SS2": P(inv={"DISK_GB": 1000}, traits=[SHARES], aggs=["aggA"]),
        "CN1": P(inv={"DISK_GB": 1000}, aggs=["aggA"]),
        "NUMA1_1": P("CN1", {"VCPU": 4}),
        "NUMA1_2": P("CN1", {"VCPU": 4}),
        "CN2": P(inv={"DISK_GB": 1000}, aggs=["aggA"]),
        "NUMA2_1": P("CN2", {"VCPU": 4}),
        "NUMA2_2": P("CN2", {"VCPU": 4}),
    },
    # provider-tree.rst: root-level traits
    "root_traits": {
        "NON_NUMA_CN": P(inv={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000},
                         traits=["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD",
                                 "COMPUTE_VOLUME_MULTI_ATTACH",
                                 "CUSTOM_WINDOWS_LICENSE_POOL"]),
        "NUMA_CN": P(inv={"DISK_GB": 1000},
                     traits=["STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH"]),
        "NUMA1": P("NUMA_CN", {"VCPU": 4, "MEMORY_MB": 1024}),
        "NUMA2": P("NUMA_CN", {"VCPU": 4, "MEMORY_MB": 1024}, traits=["HW_CPU_X86_AVX2"]),
    },
    # provider-tree.rst: same_subtree
    "same_subtree": {
        "CN": P(),
        "NUMA0": P("CN", {"VCPU": 4, "MEMORY_MB": 2048}, traits=["HW_NUMA_ROOT"]),
        "NUMA1": P("CN", {"VCPU": 4, "MEMORY_MB": 2048}, traits=["HW_NUMA_ROOT"]),
        "FPGA0_0": P("NUMA0", {"ACCELERATOR_FPGA": 1}, traits=["CUSTOM_TYPE1"]),
        "FPGA1_0": P("NUMA1", {"ACCELERATOR_FPGA": 1}, traits=["CUSTOM_TYPE1"]),
        "FPGA1_1": P("NUMA1", {"ACCELERATOR_FPGA": 1}, traits=["CUSTOM_TYPE2"]),
    },
    # nested magic spec: same_subtree with FPGAs
    "numa_fpga": {
        "compute node": P(),
        "numa0": P("compute node", {"VCPU": 4, "MEMORY_MB": 2048}),
        "numa1": P("compute node", {"VCPU": 4, "MEMORY_MB": 2048}),
        "fpga0_0": P("numa0", {"FPGA": 1}),
        "fpga1_0": P("numa1", {"FPGA": 1}),
        "fpga1_1": P("numa1", {"FPGA": 1}),
    },
    # nested magic spec: resourceless groups
    "nic_pfs": {
        "compute node": P(),
        "nic1": P("compute node", traits=["HW_NIC_ROOT"]),
        "nic2": P("compute node", traits=["HW_NIC_ROOT"]),
        "pf1_1": P("nic1", {"SRIOV_NET_VF": 4}, traits=["NET1"]),
        "pf1_2": P("nic1", {"SRIOV_NET_VF": 4}, traits=["NET2"]),
        "pf2_1": P("nic2", {"SRIOV_NET_VF": 2}, traits=["NET1"]),
        "pf2_2": P("nic2", {"SRIOV_NET_VF": 2}, traits=["NET2"]),
    },
}


def rc_name(api, name: str) -> str:
    if name in os_resource_classes.STANDARDS:
        return name
    custom = name if name.startswith("CUSTOM_") else f"CUSTOM_{name}"
    assert api.put(f"/resource_classes/{custom}").status in (201, 204)
    return custom


def trait_name(api, name: str) -> str:
    if name in os_traits.get_traits():
        return name
    custom = name if name.startswith("CUSTOM_") else f"CUSTOM_{name}"
    assert api.put(f"/traits/{custom}").status in (201, 204)
    return custom


def build(api, env: dict) -> dict[str, str]:
    uuids: dict[str, str] = {}
    for name, spec in env.items():  # parents are drawn (and listed) first
        parent = uuids[spec["parent"]] if spec["parent"] else None
        uuids[name] = create(api, name, parent=parent)
        base = f"/resource_providers/{uuids[name]}"
        gen = 0
        if spec["inv"]:
            resp = api.put(f"{base}/inventories", json={
                "resource_provider_generation": gen,
                "inventories": {rc_name(api, rc): {"total": total}
                                for rc, total in spec["inv"].items()}})
            assert resp.status == 200, resp
            gen = resp.json["resource_provider_generation"]
        if spec["traits"]:
            resp = api.put(f"{base}/traits", json={
                "resource_provider_generation": gen,
                "traits": [trait_name(api, t) for t in spec["traits"]]})
            assert resp.status == 200, resp
            gen = resp.json["resource_provider_generation"]
        if spec["aggs"]:
            resp = api.put(f"{base}/aggregates", json={
                "resource_provider_generation": gen,
                "aggregates": [AGG[a] for a in spec["aggs"]]})
            assert resp.status == 200, resp
    return uuids


def root_of(env: dict, name: str) -> str:
    while env[name]["parent"]:
        name = env[name]["parent"]
    return name


@pytest.mark.parametrize("env_name", sorted(ENVIRONMENTS))
def test_seed_environment(api, env_name):
    env = ENVIRONMENTS[env_name]
    uuids = build(api, env)
    by_uuid = {u: n for n, u in uuids.items()}
    for name, spec in env.items():
        # The whole tree, seen from any of its members.
        tree = api.get(f"/resource_providers?in_tree={uuids[name]}").json
        members = {by_uuid[p["uuid"]]: p for p in tree["resource_providers"]}
        root = root_of(env, name)
        assert set(members) == {n for n in env if root_of(env, n) == root}
        for member, body in members.items():
            parent = env[member]["parent"]
            assert body["parent_provider_uuid"] == (uuids[parent] if parent else None)
            assert body["root_provider_uuid"] == uuids[root]
        base = f"/resource_providers/{uuids[name]}"
        inventories = api.get(f"{base}/inventories").json["inventories"]
        assert {rc: inv["total"] for rc, inv in inventories.items()} == {
            rc_name(api, rc): total for rc, total in spec["inv"].items()}
        assert sorted(api.get(f"{base}/traits").json["traits"]) == sorted(
            trait_name(api, t) for t in spec["traits"])
        assert sorted(api.get(f"{base}/aggregates").json["aggregates"]) == sorted(
            AGG[a] for a in spec["aggs"])
    # Membership seen from the aggregates' side.
    for agg, agg_uuid in AGG.items():
        listed = api.get(f"/resource_providers?member_of={agg_uuid}").json
        assert {by_uuid[p["uuid"]] for p in listed["resource_providers"]} == {
            n for n, spec in env.items() if agg in spec["aggs"]}
