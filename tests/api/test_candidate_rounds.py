"""Limited answers kept tree by tree (engine.rounds): the same
bytes as the general path, through every kind of change a cloud makes, and
after a claim only the claimed host's tree is searched again."""

from __future__ import annotations

import json

import pytest

from allotment.engine import first_round, search
from allotment.engine import rounds as candidate_rounds
from allotment.server.app import create_app
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


@pytest.mark.parametrize("block", [first_round.BLOCK, 2, 3])
def test_kept_answers_are_the_general_answers_through_changes(api, monkeypatch, block):
    # Small blocks: the first round of these answers taken in blocks (engine.first_round).
    monkeypatch.setattr(first_round, "BLOCK", block)
    assembled = []
    real = candidate_rounds.assemble
    monkeypatch.setattr(candidate_rounds, "assemble",
                        lambda *a, **k: assembled.append(1) or real(*a, **k))
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


def test_not_kept_where_the_answer_is_not_taken_tree_by_tree(database_url, db,
                                                              monkeypatch):
    api = Client(create_app(make_conf(database_url,
                                      placement={"max_allocation_candidates": 5}), db=db))
    cloud(api)
    monkeypatch.setattr(candidate_rounds, "assemble",
                        lambda *_, **__: pytest.fail("kept tree by tree"))
    resp = api.get(f"/allocation_candidates?{QUERIES[0]}&limit=3", version="1.39")
    assert resp.status == 200
    assert len(resp.json["allocation_requests"]) == 3


def _random_api(database_url, db) -> Client:
    return Client(create_app(make_conf(
        database_url, placement={"randomize_allocation_candidates": True}), db=db))


def _pieces(body: dict) -> tuple[list[str], dict]:
    return ([json.dumps(ar, sort_keys=True) for ar in body["allocation_requests"]],
            body["provider_summaries"])


def random_answers_hold(api, monkeypatch, rounds: int = 12) -> set:
    """Random answers kept tree by tree, against the general path's: with a
    limit past every candidate, the same candidates and summaries; with a
    smaller one, distinct candidates of the whole answer, one of each host
    before a second of any, and the summaries of exactly their hosts.
    Returns the first candidates the smaller answers began with."""
    firsts = set()
    for k, query in enumerate(QUERIES):
        path = f"/allocation_candidates?{query}&root_required=!{DISABLED}"
        with monkeypatch.context() as m:
            m.setattr(candidate_rounds, "serves", lambda *_: False)
            whole = api.get(path, version="1.39").json
        every, summaries = _pieces(whole)
        kept = api.get(path + "&limit=1000", version="1.39").json
        assert sorted(_pieces(kept)[0]) == sorted(every), query
        assert kept["provider_summaries"] == summaries
        hosts = {next(iter(json.loads(c)["allocations"])) for c in every}
        for _ in range(rounds):
            limit = 3 if k % 2 else 9
            body = api.get(f"{path}&limit={limit}", version="1.39").json
            got, _ = _pieces(body)
            assert len(got) == min(limit, len(every)) == len(set(got))
            assert set(got) <= set(every)
            roots = [_root(api, c) for c in got]
            trees = len({_root(api, c) for c in every})
            assert len(set(roots[:trees])) == len(roots[:trees])  # one each first
            assert set(body["provider_summaries"]) == {
                u for u in summaries if _root(api, u, provider=True) in roots}
            if got:
                firsts.add((k, got[0]))
        assert hosts
    return firsts


def _root(api, candidate: str, provider: bool = False) -> str:
    uuids = [candidate] if provider else list(json.loads(candidate)["allocations"])
    resp = api.get(f"/resource_providers/{uuids[0]}", version="1.39")
    return resp.json["root_provider_uuid"]


def test_random_answers_are_kept_and_drawn_afresh_through_changes(database_url, db,
                                                                   monkeypatch):
    api = _random_api(database_url, db)
    assembled = []
    real = candidate_rounds.assemble
    monkeypatch.setattr(candidate_rounds, "assemble",
                        lambda *a, **k: assembled.append(k["rng"]) or real(*a, **k))
    w = cloud(api)
    firsts = random_answers_hold(api, monkeypatch)
    assert assembled and all(rng is not None for rng in assembled)
    # Random: the answers did not all begin alike, for any query.
    assert len(firsts) > len(QUERIES)
    w.use("numa-host1-numa0", {"VCPU": 3, "MEMORY_MB": 1024})
    w.set_traits("cn1", ["HW_CPU_X86_AVX2", DISABLED])
    w.set_inventory("numa-host0-numa1", {"VCPU": 1, "MEMORY_MB": 4096})
    random_answers_hold(api, monkeypatch, rounds=3)
    # Hosts of more candidates than are kept whole are searched at random
    # (a new trait's name drops everything kept).
    monkeypatch.setattr(candidate_rounds, "WHOLE_TREE", 1)
    w.set_traits("numa-host3", ["CUSTOM_NEW_TRAIT", "HW_CPU_X86_AVX2"])
    random_answers_hold(api, monkeypatch, rounds=3)


def _count_searches(monkeypatch) -> list[int]:
    """The trees searched from now on (their root positions), in order."""
    searched: list[int] = []
    real = search.tree_candidates

    def counted(plan, r, rng=None):
        searched.append(r)
        return real(plan, r, rng)

    monkeypatch.setattr(candidate_rounds, "tree_candidates", counted)
    return searched


def test_a_claim_draws_only_its_host_again_at_random(database_url, db, monkeypatch):
    api = _random_api(database_url, db)
    w = cloud(api)
    searched = _count_searches(monkeypatch)
    path = f"/allocation_candidates?{QUERIES[2]}&limit=1000&root_required=!{DISABLED}"
    first = api.get(path, version="1.39")
    assert first.status == 200
    assert sorted(searched) == sorted(set(searched)) and len(searched) == 8
    searched.clear()
    again = api.get(path, version="1.39")
    assert searched == []  # nothing changed: drawn from what is kept
    assert sorted(_pieces(again.json)[0]) == sorted(_pieces(first.json)[0])
    w.use("numa-host2-numa0", {"VCPU": 1})
    api.get(path, version="1.39")
    assert len(searched) == 1  # the claimed host's tree alone


def test_random_answers_keep_at_most_the_bound_and_search_the_rest(database_url, db,
                                                                    monkeypatch):
    api = _random_api(database_url, db)
    cloud(api)
    # Room for 3 trees (the section's state key counts as one): of the 8
    # hosts, 3 kept whole, the other 5 searched again for every answer.
    monkeypatch.setattr(candidate_rounds, "WHOLE_TREES_KEPT", 4)
    random_answers_hold(api, monkeypatch, rounds=4)
    searched = _count_searches(monkeypatch)
    path = f"/allocation_candidates?{QUERIES[2]}&limit=1000&root_required=!{DISABLED}"
    first = api.get(path, version="1.39")
    # The kind was asked above: 3 of its 8 trees kept, the others searched.
    assert len(searched) == 5 and len(set(searched)) == 5
    for _ in range(3):
        searched.clear()
        again = api.get(path, version="1.39")
        assert len(searched) == 5 and len(set(searched)) == 5
        assert sorted(_pieces(again.json)[0]) == sorted(_pieces(first.json)[0])
