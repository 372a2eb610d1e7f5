"""Sharing providers meeting trees.

A sharing provider serves every tree that has a provider in one of its
aggregates.  When the unsuffixed group is served wholly by sharing providers,
those allocations fit every such tree, and each tree combines them with its
own providers for the suffixed groups.  Upstream Placement 16.0.0 keeps that
set of sharing allocations for one tree only (chosen by the internal order of
its database ids), so of several such trees it offers at most one; allotment
offers them all (docs/compatibility.md, "Sharing providers and several
trees").  The worlds below are the minimised reproductions of that
difference.
"""

from __future__ import annotations

from tests.api.candidate_helpers import SHARES, World, cand

DISK, IP, MEM, VCPU, BW = "DISK_GB", "IPV4_ADDRESS", "MEMORY_MB", "VCPU", \
    "NET_BW_EGR_KILOBIT_PER_SEC"


def member_of_anchor_world(api) -> World:
    """A root without inventory, a child in aggregate A, a NUMA child outside
    it, two sharing providers in A."""
    w = World(api)
    w.add("cn")
    w.add("gpu", parent="cn", aggs=["A"])
    w.add("numa", parent="cn", inv={MEM: {"total": 60309, "max_unit": 8028, "step_size": 512},
                                    VCPU: {"total": 4, "reserved": 1, "max_unit": 3}})
    w.add("ss_ip", inv={IP: {"total": 255, "max_unit": 7}}, traits=[SHARES, "CUSTOM_GOLD"],
          aggs=["A"])
    w.add("ss_disk", inv={DISK: {"total": 18799, "max_unit": 16387}}, traits=[SHARES],
          aggs=["A"])
    return w


def test_sharing_providers_serve_a_tree_through_a_child_in_their_aggregate(api):
    w = member_of_anchor_world(api)
    body = w.get(w.query(
        "resources=DISK_GB:1024,IPV4_ADDRESS:2&member_of={A}"
        "&resources_PF2=MEMORY_MB:1024,VCPU:1&group_policy=none")).json
    [only] = body["allocation_requests"]
    assert w.shape(only) == cand(("ss_disk", {DISK: 1024}), ("ss_ip", {IP: 2}),
                                 ("numa", {MEM: 1024, VCPU: 1}))
    assert w.mappings(only) == {"": {"ss_disk", "ss_ip"}, "_PF2": {"numa"}}
    # The summaries describe the whole tree and both pools.
    assert {w.name(u) for u in body["provider_summaries"]} == {
        "cn", "gpu", "numa", "ss_ip", "ss_disk"}


def test_member_of_is_met_by_the_sharing_provider_itself(api):
    # The pool is in A and B; tree cn meets it through A.  member_of=B holds
    # for the pool's allocations even though no provider of cn is in B, and
    # a pool outside B is not considered at all.
    w = member_of_anchor_world(api)
    w.add("ss_other", inv={DISK: 100000}, traits=[SHARES], aggs=["A", "B"])
    got = w.candidates(w.query(
        "resources=DISK_GB:1024&member_of={B}&resources_PF2=VCPU:1&group_policy=none"))
    assert got == [cand(("ss_other", {DISK: 1024}), ("numa", {VCPU: 1}))]
    got = w.candidates(w.query(
        "resources=DISK_GB:1024&member_of={A}&resources_PF2=VCPU:1&group_policy=none"))
    assert sorted(got, key=sorted) == sorted([
        cand(("ss_disk", {DISK: 1024}), ("numa", {VCPU: 1})),
        cand(("ss_other", {DISK: 1024}), ("numa", {VCPU: 1}))], key=sorted)
    # A member_of on a suffixed group is about the provider serving it.
    assert w.candidates(w.query(
        "resources=DISK_GB:1024&resources_PF2=VCPU:1&member_of_PF2={A}"
        "&group_policy=none")) == []


def limit_granular_world(api) -> World:
    """A host with local disk, a NIC child, and a disk pool in its aggregate."""
    w = World(api)
    w.add("cn", inv={DISK: {"total": 1205}, MEM: {"total": 138485, "reserved": 20585},
                     VCPU: {"total": 112, "reserved": 14, "max_unit": 99,
                            "allocation_ratio": 2.0}},
          aggs=["A"])
    w.add("nic", parent="cn", inv={BW: {"total": 13798137, "max_unit": 2768716}})
    w.add("ss_disk", inv={DISK: {"total": 11504, "max_unit": 10226, "min_unit": 2}},
          traits=[SHARES, "STORAGE_DISK_HDD"], aggs=["A"])
    return w


def test_a_limited_granular_request_may_take_disk_from_the_pool(api):
    w = limit_granular_world(api)
    query = w.query(
        "in_tree_GPU={nic}&group_policy=none&resources_GPU=MEMORY_MB:9171"
        "&resourcesnuma0=NET_BW_EGR_KILOBIT_PER_SEC:64023&resources=DISK_GB:1176")
    local = cand(("cn", {DISK: 1176, MEM: 9171}), ("nic", {BW: 64023}))
    pooled = cand(("ss_disk", {DISK: 1176}), ("cn", {MEM: 9171}), ("nic", {BW: 64023}))
    everything = w.candidates(query, version="1.37")
    assert sorted(everything, key=sorted) == sorted([local, pooled], key=sorted)
    assert sorted(w.candidates(query + "&limit=5", version="1.37"), key=sorted) == \
        sorted(everything, key=sorted)
    assert w.candidates(query + "&limit=1", version="1.37")[0] in everything


def hosts_and_one_pool(api, hosts: int = 6) -> World:
    w = World(api)
    for h in range(hosts):
        w.add(f"cn{h}", aggs=["A"])
        w.add(f"cn{h}_numa", parent=f"cn{h}", inv={VCPU: 8, MEM: 8192})
    w.add("ss", inv={DISK: 1000, "CUSTOM_LICENSE_WINDOWS": 10}, traits=[SHARES], aggs=["A"])
    return w


def test_a_pool_serving_the_unsuffixed_group_reaches_every_host(api):
    # Upstream 16.0.0 answers this with a single candidate, on one host of
    # its choosing: a scheduler could only ever place such a server there.
    w = hosts_and_one_pool(api)
    got = w.candidates("resources=DISK_GB:10&resources1=VCPU:1")
    assert sorted(got, key=sorted) == sorted(
        (cand(("ss", {DISK: 10}), (f"cn{h}_numa", {VCPU: 1})) for h in range(6)), key=sorted)


def test_root_required_applies_to_the_tree_and_not_to_the_pool(api):
    w = hosts_and_one_pool(api, hosts=3)
    w.set_traits("cn1", ["HW_NUMA_ROOT"])
    query = "resources10=MEMORY_MB:1&root_required=!HW_NUMA_ROOT" \
            "&resources=CUSTOM_LICENSE_WINDOWS:1&group_policy=none"
    hosts = {next(n for n, _, _ in c if n != "ss") for c in w.candidates(query)}
    assert hosts == {"cn0_numa", "cn2_numa"}


def test_forbidden_traits_of_a_suffixed_group_do_not_touch_the_pool(api):
    w = hosts_and_one_pool(api, hosts=3)
    w.set_traits("ss", [SHARES, "CUSTOM_GOLD"])
    w.set_traits("cn2_numa", ["CUSTOM_GOLD"])
    query = w.query("resources=CUSTOM_LICENSE_WINDOWS:1&member_of={A}"
                    "&resources_COMPUTE=MEMORY_MB:206&required_COMPUTE=!CUSTOM_GOLD"
                    "&required_COMPUTE=!HW_CPU_X86_AVX512F&group_policy=none")
    hosts = {next(n for n, _, _ in c if n != "ss") for c in w.candidates(query)}
    assert hosts == {"cn0_numa", "cn1_numa"}


def test_forbidden_traits_of_the_unsuffixed_group_exclude_the_pool(api):
    w = hosts_and_one_pool(api, hosts=2)
    w.set_traits("ss", [SHARES, "HW_NIC_OFFLOAD_TSO"])
    query = "resources=DISK_GB:5&required=!HW_NIC_OFFLOAD_TSO&resources3=VCPU:1" \
            "&group_policy=none"
    assert w.candidates(query, version="1.27") == []
    w.set_traits("ss", [SHARES])
    assert len(w.candidates(query, version="1.27")) == 2
