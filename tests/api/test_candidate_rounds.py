"""Limited answers kept tree by tree (service.candidate_rounds): the same
bytes as the general path, through every kind of change a cloud makes, and
after a claim only the claimed host's tree is searched again."""

from __future__ import annotations

import pytest

from allotment.engine import search
from allotment.server.app import create_app
from allotment.service import candidate_rounds
from tests.api.candidate_helpers import World
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

DISABLED = "COMPUTE_STATUS_DISABLED"

QUERIES = [
    "resources=VCPU:1,MEMORY_MB:512,DISK_GB:1",
    "resources=VCPU:2,DISK_GB:10&required=HW_CPU_X86_AVX2",
    "resources=DISK_GB:10&resources_N=VCPU:2,MEMORY_MB:1024",
    "resources=DISK_GB:5&resources_C=VCPU:1&resources_V=SRIOV_NET_VF:1"
    "&required_V=CUSTOM_PHYSNET0&same_subtree=_C,_V&group_policy=none",
    "resources=VCPU:1&resources_G=VGPU:1&group_policy=isolate",
]


def cloud(api) -> World:
    w = World(api)
    for h in range(4):
        host = f"numa-host{h}"
        w.add(host, inv={"DISK_GB": 100}, traits=["HW_CPU_X86_AVX2"] if h % 2 else [])
        for n in range(2):
            node = f"{host}-numa{n}"
            w.add(node, parent=host, inv={"VCPU": 4, "MEMORY_MB": 4096})
            w.add(f"{node}-pf", parent=node, inv={"SRIOV_NET_VF": 2}, traits=["PHYSNET0"])
            w.add(f"{node}-gpu", parent=node, inv={"VGPU": 1})
    for h in range(4):
        w.add(f"cn{h}", inv={"VCPU": 3, "MEMORY_MB": 2048, "DISK_GB": 40},
              traits=["HW_CPU_X86_AVX2"] if h % 2 else [])
    return w


def answers(api, monkeypatch) -> None:
    """Every query, at several microversions and limits, answered kept
    tree by tree and the general way: byte for byte the same."""
    for k, query in enumerate(QUERIES):
        # Named suffixes and same_subtree from 1.36; 1.29 writes no mappings.
        for version in ("1.29", "1.36", "1.39") if k < 2 else ("1.36", "1.39"):
            for limit in (1, 3, 7, 100):
                path = f"/allocation_candidates?{query}&limit={limit}"
                if version >= "1.35":
                    path += f"&root_required=!{DISABLED}"
                kept = api.get(path, version=version)
                with monkeypatch.context() as m:
                    m.setattr(candidate_rounds, "serves", lambda *_: False)
                    general = api.get(path, version=version)
                assert kept.status == general.status == 200, (kept, general)
                assert kept.text == general.text, (query, version, limit)


def test_kept_answers_are_the_general_answers_through_changes(api, monkeypatch):
    assembled = []
    real = candidate_rounds.assemble
    monkeypatch.setattr(candidate_rounds, "assemble",
                        lambda *a: assembled.append(1) or real(*a))
    w = cloud(api)
    answers(api, monkeypatch)
    assert assembled  # the kept path answered
    # Claims and their deletion.
    held = w.use("numa-host1-numa0", {"VCPU": 3, "MEMORY_MB": 1024})
    w.use("cn2", {"VCPU": 2})
    w.use("numa-host2-numa1-pf", {"SRIOV_NET_VF": 2})
    answers(api, monkeypatch)
    assert api.delete(f"/allocations/{held}").status == 204
    answers(api, monkeypatch)
    # An inventory of a child changed, a host disabled, a trait created and
    # given, a provider moved out of its tree, a host added and one deleted.
    w.set_inventory("numa-host0-numa1", {"VCPU": 1, "MEMORY_MB": 4096})
    w.set_traits("cn1", ["HW_CPU_X86_AVX2", DISABLED])
    w.set_traits("numa-host3", ["CUSTOM_NEW_TRAIT", "HW_CPU_X86_AVX2"])
    answers(api, monkeypatch)
    gpu = w.uuids["numa-host3-numa1-gpu"]
    resp = api.put(f"/resource_providers/{gpu}", version="1.37",
                   json={"name": "numa-host3-numa1-gpu", "parent_provider_uuid": None})
    assert resp.status == 200, resp
    w.add("cn9", inv={"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 80})
    assert api.delete(f"/resource_providers/{w.uuids['cn0']}").status == 204
    answers(api, monkeypatch)


def test_a_claim_searches_only_its_host_again(api, monkeypatch):
    w = cloud(api)
    searched: list[int] = []
    real = search.tree_candidates

    def counted(plan, r):
        searched.append(r)
        return real(plan, r)

    monkeypatch.setattr(candidate_rounds, "tree_candidates", counted)
    path = f"/allocation_candidates?{QUERIES[2]}&limit=1000&root_required=!{DISABLED}"
    first = api.get(path, version="1.39")
    assert first.status == 200
    assert len(set(searched)) == 8  # every host (some again, for later rounds)
    searched.clear()
    assert api.get(path, version="1.39").text == first.text
    assert searched == []  # nothing changed: nothing searched
    w.use("numa-host2-numa0", {"VCPU": 1})
    after = api.get(path, version="1.39")
    assert len(searched) == 1  # the claimed host's tree alone
    assert after.text != first.text


@pytest.mark.parametrize("setting", [
    {"placement": {"randomize_allocation_candidates": True}},
    {"placement": {"max_allocation_candidates": 5}},
])
def test_not_kept_where_the_answer_is_not_taken_tree_by_tree(database_url, db, setting,
                                                              monkeypatch):
    api = Client(create_app(make_conf(database_url, **setting), db=db))
    cloud(api)
    monkeypatch.setattr(candidate_rounds, "assemble",
                        lambda *_: pytest.fail("kept tree by tree"))
    resp = api.get(f"/allocation_candidates?{QUERIES[0]}&limit=3", version="1.39")
    assert resp.status == 200
    assert len(resp.json["allocation_requests"]) == 3
