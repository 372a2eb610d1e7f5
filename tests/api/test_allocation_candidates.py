"""GET /allocation_candidates: response formats per microversion, filters,
usage, and answers that follow every write."""

from __future__ import annotations

import datetime
from collections import Counter
from email.utils import parsedate_to_datetime

import pytest

from tests.api.allocation_helpers import SERVICE
from tests.api.candidate_helpers import SHARES, World, cand
from tests.api.test_resource_providers import PROJECT, USER

DISK, MEM, VCPU, VF = "DISK_GB", "MEMORY_MB", "VCPU", "SRIOV_NET_VF"


def host(api) -> World:
    w = World(api)
    w.add("cn", inv={VCPU: 8, MEM: 2048, DISK: 100}, traits=["HW_CPU_X86_AVX2", "COMPUTE_NODE"])
    return w


def test_not_there_before_1_10(api):
    host(api)
    assert api.get("/allocation_candidates?resources=VCPU:1", version="1.9").status == 404


@pytest.mark.parametrize("version", ["1.10", "1.11"])
def test_list_format_before_1_12(api, version):
    w = host(api)
    body = w.get("resources=VCPU:1,MEMORY_MB:64", version=version).json
    cn = w.uuids["cn"]
    assert body == {
        "allocation_requests": [{"allocations": [
            {"resource_provider": {"uuid": cn}, "resources": {VCPU: 1, MEM: 64}}]}],
        "provider_summaries": {cn: {"resources": {
            VCPU: {"capacity": 8, "used": 0}, MEM: {"capacity": 2048, "used": 0}}}},
    }


def test_dict_format_from_1_12(api):
    w = host(api)
    body = w.get("resources=VCPU:1,MEMORY_MB:64", version="1.12").json
    cn = w.uuids["cn"]
    assert body["allocation_requests"] == [
        {"allocations": {cn: {"resources": {VCPU: 1, MEM: 64}}}}]


def test_list_format_with_a_sharing_provider(api):
    w = World(api)
    w.add("cn", inv={VCPU: 8}, aggs=["a"])
    w.add("ss", inv={DISK: 100}, traits=[SHARES], aggs=["a"])
    body = w.get("resources=VCPU:1,DISK_GB:10", version="1.10").json
    [only] = body["allocation_requests"]
    assert sorted(only["allocations"], key=lambda a: a["resources"].get(VCPU, 0)) == [
        {"resource_provider": {"uuid": w.uuids["ss"]}, "resources": {DISK: 10}},
        {"resource_provider": {"uuid": w.uuids["cn"]}, "resources": {VCPU: 1}},
    ]
    assert set(body["provider_summaries"]) == {w.uuids["cn"], w.uuids["ss"]}


def test_cache_headers_from_1_15(api):
    w = host(api)
    old = w.get("resources=VCPU:1", version="1.14")
    assert "last-modified" not in old.headers and "cache-control" not in old.headers
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    new = w.get("resources=VCPU:1", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    # Placement reports the time of the answer: candidates have no single
    # modification time.
    stamp = parsedate_to_datetime(new.headers["last-modified"])
    assert before <= stamp <= datetime.datetime.now(datetime.UTC)


def test_summary_traits_from_1_17(api):
    w = host(api)
    cn = w.uuids["cn"]
    assert "traits" not in w.get("resources=VCPU:1", "1.16").json["provider_summaries"][cn]
    summary = w.get("resources=VCPU:1", "1.17").json["provider_summaries"][cn]
    assert sorted(summary["traits"]) == ["COMPUTE_NODE", "HW_CPU_X86_AVX2"]


def test_summary_traits_in_placement_order(api):
    """Standard traits first, then custom ones as they were created."""
    w = World(api)
    w.add("cn", inv={VCPU: 8}, traits=["CUSTOM_ZETA", "CUSTOM_ALPHA", "HW_NUMA_ROOT",
                                       "COMPUTE_NODE"])
    traits = w.get("resources=VCPU:1").json["provider_summaries"][w.uuids["cn"]]["traits"]
    assert traits[:2] == sorted(traits[:2], key=_standard_rank)
    assert set(traits[:2]) == {"HW_NUMA_ROOT", "COMPUTE_NODE"}
    assert traits[2:] == [w.trait("CUSTOM_ZETA"), w.trait("CUSTOM_ALPHA")]


def _standard_rank(name: str) -> int:
    import os_traits

    return os_traits.get_traits().index(name)


def test_summary_lists_every_class_from_1_27(api):
    w = host(api)
    cn = w.uuids["cn"]
    assert set(w.get("resources=VCPU:1", "1.26").json["provider_summaries"][cn]
               ["resources"]) == {VCPU}
    assert w.get("resources=VCPU:1", "1.27").json["provider_summaries"][cn]["resources"] == {
        VCPU: {"capacity": 8, "used": 0}, MEM: {"capacity": 2048, "used": 0},
        DISK: {"capacity": 100, "used": 0}}


def numa_host(api) -> World:
    w = World(api)
    w.add("cn", inv={VCPU: 4, MEM: 2048})
    w.add("numa0", parent="cn", inv={VCPU: 8})
    w.add("numa1", parent="cn", inv={VCPU: 8})
    return w


def test_nested_providers_combine_from_1_29(api):
    w = numa_host(api)
    query = "resources=VCPU:1,MEMORY_MB:64"
    # Before 1.29 a candidate takes at most one provider of a tree.
    assert w.candidates(query, "1.28") == [cand(("cn", {VCPU: 1, MEM: 64}))]
    old = w.get(query, "1.28").json["provider_summaries"]
    assert set(old) == {w.uuids["cn"]}
    assert "parent_provider_uuid" not in old[w.uuids["cn"]]
    assert Counter(w.candidates(query, "1.29")) == Counter([
        cand(("cn", {VCPU: 1, MEM: 64})),
        cand(("cn", {MEM: 64}), ("numa0", {VCPU: 1})),
        cand(("cn", {MEM: 64}), ("numa1", {VCPU: 1})),
    ])
    new = w.get(query, "1.29").json["provider_summaries"]
    cn = w.uuids["cn"]
    assert new == {
        cn: {"resources": {VCPU: {"capacity": 4, "used": 0},
                           MEM: {"capacity": 2048, "used": 0}},
             "traits": [], "parent_provider_uuid": None, "root_provider_uuid": cn},
        **{w.uuids[n]: {"resources": {VCPU: {"capacity": 8, "used": 0}}, "traits": [],
                        "parent_provider_uuid": cn, "root_provider_uuid": cn}
           for n in ("numa0", "numa1")},
    }


def test_summaries_cover_whole_trees_from_1_29(api):
    w = World(api)
    w.add("cn", inv={VCPU: 4})
    w.add("nic", parent="cn")
    w.add("pf", parent="nic", inv={VF: 4})
    summaries = w.get("resources=VCPU:1", "1.29").json["provider_summaries"]
    # Providers that contribute nothing are still described, with no resources.
    assert {w.name(u): s["resources"] for u, s in summaries.items()} == {
        "cn": {VCPU: {"capacity": 4, "used": 0}}, "nic": {},
        "pf": {VF: {"capacity": 4, "used": 0}}}


def test_mappings_from_1_34(api):
    w = numa_host(api)
    query = "resources=MEMORY_MB:64&resources_N=VCPU:2"
    assert all("mappings" not in ar for ar in w.get(query, "1.33").json["allocation_requests"])
    body = w.get(query, "1.34").json
    assert sorted((w.mappings(ar)[""], sorted(w.mappings(ar)["_N"]))
                  for ar in body["allocation_requests"]) == sorted(
        [({"cn"}, [n]) for n in ("cn", "numa0", "numa1")])


def test_empty_result(api):
    host(api)
    resp = api.get("/allocation_candidates?resources=VCPU:100")
    assert resp.status == 200
    assert resp.json == {"allocation_requests": [], "provider_summaries": {}}


def test_capacity_counts_reserved_ratio_and_usage(api):
    w = World(api)
    w.add("cn", inv={VCPU: {"total": 10, "reserved": 2, "allocation_ratio": 1.5},
                     MEM: {"total": 1000, "reserved": 0, "allocation_ratio": 1.0}})
    w.use("cn", {VCPU: 5, MEM: 100})
    summary = w.get("resources=VCPU:1", "1.27").json["provider_summaries"][w.uuids["cn"]]
    assert summary["resources"] == {
        VCPU: {"capacity": 12, "used": 5}, MEM: {"capacity": 1000, "used": 100}}
    assert len(w.candidates("resources=VCPU:7")) == 1
    assert w.candidates("resources=VCPU:8") == []


def test_unit_limits(api):
    w = World(api)
    w.add("cn", inv={VCPU: {"total": 16, "min_unit": 2, "max_unit": 8, "step_size": 2}})
    assert len(w.candidates("resources=VCPU:4")) == 1
    for amount in (1, 3, 10):
        assert w.candidates(f"resources=VCPU:{amount}") == []


def test_limit_from_1_16_trims_summaries_too(api):
    w = World(api)
    for name in ("a", "b", "c"):
        w.add(name, inv={VCPU: 4})
    body = w.get("resources=VCPU:1&limit=2", "1.16").json
    assert len(body["allocation_requests"]) == 2
    used = {u for ar in body["allocation_requests"] for u in ar["allocations"]}
    assert set(body["provider_summaries"]) == used
    assert len(w.get("resources=VCPU:1&limit=5", "1.16").json["allocation_requests"]) == 3


def test_required_and_forbidden_traits_from_1_17_and_1_22(api):
    w = World(api)
    w.add("fast", inv={VCPU: 4}, traits=["HW_CPU_X86_AVX2"])
    w.add("slow", inv={VCPU: 4})
    assert w.candidates("resources=VCPU:1&required=HW_CPU_X86_AVX2", "1.17") == [
        cand(("fast", {VCPU: 1}))]
    assert w.candidates("resources=VCPU:1&required=!HW_CPU_X86_AVX2", "1.22") == [
        cand(("slow", {VCPU: 1}))]


def test_any_of_traits_from_1_39(api):
    w = World(api)
    w.add("a", inv={VCPU: 4}, traits=["CUSTOM_A"])
    w.add("b", inv={VCPU: 4}, traits=["CUSTOM_B"])
    w.add("c", inv={VCPU: 4}, traits=["CUSTOM_C"])
    got = w.candidates("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B", "1.39")
    assert Counter(got) == Counter([cand(("a", {VCPU: 1})), cand(("b", {VCPU: 1}))])
    # Repeated required keys all apply from 1.39 (before, the last won).
    got = w.candidates("resources=VCPU:1&required=in:CUSTOM_A,CUSTOM_B&required=!CUSTOM_A")
    assert got == [cand(("b", {VCPU: 1}))]
    got = w.candidates("resources=VCPU:1&required=CUSTOM_A&required=CUSTOM_C", "1.38")
    assert got == [cand(("c", {VCPU: 1}))]


def test_member_of(api):
    w = World(api)
    w.add("a", inv={VCPU: 4}, aggs=["x"])
    w.add("b", inv={VCPU: 4}, aggs=["y"])
    w.add("c", inv={VCPU: 4}, aggs=["x", "y"])
    one = {VCPU: 1}
    assert Counter(w.candidates(w.query("resources=VCPU:1&member_of={x}"), "1.21")) == \
        Counter([cand(("a", one)), cand(("c", one))])
    assert Counter(w.candidates(w.query("resources=VCPU:1&member_of=in:{x},{y}"), "1.21")) \
        == Counter([cand(("a", one)), cand(("b", one)), cand(("c", one))])
    # Repeated member_of means "in all of them" from 1.24.
    assert w.candidates(w.query("resources=VCPU:1&member_of={x}&member_of={y}"), "1.24") \
        == [cand(("c", one))]
    assert w.candidates(w.query("resources=VCPU:1&member_of=!{y}"), "1.32") == [
        cand(("a", one))]
    assert w.candidates(w.query("resources=VCPU:1&member_of=!in:{x},{y}"), "1.32") == []


def test_unknown_aggregate_or_tree_finds_nothing(api):
    w = host(api)
    assert w.candidates("resources=VCPU:1&member_of=" + "1" * 32) == []
    assert w.candidates("resources=VCPU:1&in_tree=" + "2" * 32) == []


def test_granular_numeric_suffixes_from_1_25_and_strings_from_1_33(api):
    w = numa_host(api)
    numbered = "resources1=VCPU:8&resources2=VCPU:8&group_policy=isolate"
    # Two providers of one tree: only from 1.29.
    assert w.candidates(numbered, "1.28") == []
    assert Counter(w.candidates(numbered, "1.29")) == Counter([
        cand(("numa0", {VCPU: 8}), ("numa1", {VCPU: 8}))] * 2)
    w.add("flat", inv={VCPU: 16})
    # One provider per candidate is fine before 1.29, a child as well.
    assert Counter(w.candidates("resources1=VCPU:8", "1.25")) == Counter(
        cand((n, {VCPU: 8})) for n in ("flat", "numa0", "numa1"))
    named = "resources_A=VCPU:8&resources_B=VCPU:8&group_policy=none"
    assert Counter(w.candidates(named, "1.33")) == Counter(
        [cand(("numa0", {VCPU: 8}), ("numa1", {VCPU: 8}))] * 2
        + [cand(("flat", {VCPU: 16}))])


def test_in_tree_from_1_31(api):
    w = numa_host(api)
    w.add("other", inv={VCPU: 4})
    assert w.candidates(w.query("resources=VCPU:1&in_tree={other}"), "1.31") == [
        cand(("other", {VCPU: 1}))]


def test_root_required_from_1_35(api):
    w = numa_host(api)
    w.set_traits("cn", ["COMPUTE_NODE"])
    w.add("other", inv={VCPU: 4})
    got = w.candidates("resources_X=VCPU:8&root_required=COMPUTE_NODE", "1.35")
    assert Counter(got) == Counter([cand(("numa0", {VCPU: 8})), cand(("numa1", {VCPU: 8}))])
    got = w.candidates("resources=VCPU:4&root_required=!COMPUTE_NODE", "1.35")
    assert got == [cand(("other", {VCPU: 4}))]


def test_same_subtree_from_1_36(api):
    w = World(api)
    w.add("cn")
    w.add("numa0", parent="cn", inv={VCPU: 4}, traits=["HW_NUMA_ROOT"])
    w.add("numa1", parent="cn", inv={VCPU: 4}, traits=["HW_NUMA_ROOT"])
    w.add("gpu0", parent="numa0", inv={"VGPU": 1})
    got = w.candidates("resources_C=VCPU:1&resources_G=VGPU:1&group_policy=none"
                       "&same_subtree=_C,_G", "1.36")
    assert got == [cand(("numa0", {VCPU: 1}), ("gpu0", {"VGPU": 1}))]


def test_answers_follow_every_write(api):
    """The cached provider world never outlives a change to it."""
    w = World(api)
    w.add("a", inv={VCPU: 4})
    q = "resources=VCPU:2"
    assert w.candidates(q) == [cand(("a", {VCPU: 2}))]
    # Usage: a claim that fills the provider removes it.
    consumer = w.use("a", {VCPU: 3})
    assert w.candidates(q) == []
    assert api.delete(f"/allocations/{consumer}").status == 204
    assert w.candidates(q) == [cand(("a", {VCPU: 2}))]
    # A new provider, then its inventory.
    w.add("b")
    assert w.candidates(q) == [cand(("a", {VCPU: 2}))]
    w.set_inventory("b", {VCPU: 2})
    assert len(w.candidates(q)) == 2
    # Inventory shrinking below the request.
    w.set_inventory("a", {VCPU: 1})
    assert w.candidates(q) == [cand(("b", {VCPU: 2}))]
    # Traits.
    w.trait("CUSTOM_GOLD")
    assert w.candidates(q + "&required=CUSTOM_GOLD") == []
    w.set_traits("b", ["CUSTOM_GOLD"])
    assert w.candidates(q + "&required=CUSTOM_GOLD") == [cand(("b", {VCPU: 2}))]
    # Aggregates.
    agg = w.agg("x")
    assert w.candidates(f"{q}&member_of={agg}") == []
    w.set_aggregates("b", ["x"])
    assert w.candidates(f"{q}&member_of={agg}") == [cand(("b", {VCPU: 2}))]
    # Parents: moving b under a makes one tree of them.
    w.set_inventory("a", {MEM: 64})
    assert w.candidates("resources=VCPU:2,MEMORY_MB:64") == []
    resp = api.put(f"/resource_providers/{w.uuids['b']}",
                   json={"name": "b", "parent_provider_uuid": w.uuids["a"]})
    assert resp.status == 200, resp
    assert w.candidates("resources=VCPU:2,MEMORY_MB:64") == [
        cand(("a", {MEM: 64}), ("b", {VCPU: 2}))]
    # Deletion.
    resp = api.put(f"/resource_providers/{w.uuids['b']}",
                   json={"name": "b", "parent_provider_uuid": None})
    assert resp.status == 200, resp
    assert api.delete(f"/resource_providers/{w.uuids['b']}").status == 204
    assert w.candidates(q) == []


def test_answers_follow_a_reshape(api):
    w = World(api)
    w.add("cn", inv={"VGPU": 4})
    w.add("gpu", parent="cn")
    consumer = w.use("cn", {"VGPU": 1})
    cn, gpu = w.uuids["cn"], w.uuids["gpu"]
    resp = api.post("/reshaper", headers=SERVICE, json={
        "inventories": {
            cn: {"resource_provider_generation": w.generations["cn"], "inventories": {}},
            gpu: {"resource_provider_generation": w.generations["gpu"],
                  "inventories": {"VGPU": {"total": 4}}}},
        "allocations": {consumer: {
            "allocations": {gpu: {"resources": {"VGPU": 1}}},
            "project_id": PROJECT, "user_id": USER, "consumer_generation": 1,
            "consumer_type": "INSTANCE"}}})
    assert resp.status == 204, resp
    body = w.get("resources=VGPU:3").json
    assert [w.shape(ar) for ar in body["allocation_requests"]] == [
        cand(("gpu", {"VGPU": 3}))]
    assert body["provider_summaries"][gpu]["resources"] == {
        "VGPU": {"capacity": 4, "used": 1}}


def test_needs_permission(api):
    host(api)
    resp = api.get("/allocation_candidates?resources=VCPU:1", token="someone")
    assert resp.status == 403
