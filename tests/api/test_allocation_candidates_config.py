"""GET /allocation_candidates honours the [placement] candidate options."""

from __future__ import annotations

import pytest

from tests.api.candidate_helpers import World

VCPU = "VCPU"


def two_hosts_two_numas(api) -> World:
    w = World(api)
    for h in ("h1", "h2"):
        w.add(h, inv={"MEMORY_MB": 1024})
        for n in ("n0", "n1"):
            w.add(f"{h}{n}", parent=h, inv={VCPU: 4})
    return w


def hosts_of(w: World, body: dict) -> list[str]:
    """The host (root) of each candidate, in answer order."""
    return [w.name(next(iter(ar["allocations"])))[:2] for ar in body["allocation_requests"]]


QUERY = "resources=VCPU:1,MEMORY_MB:1&limit=2"


@pytest.mark.parametrize("conf_overrides", [{"placement": {"max_allocation_candidates": 3}}])
def test_max_allocation_candidates_caps_every_answer(api):
    w = two_hosts_two_numas(api)
    assert len(w.get("resources=VCPU:1,MEMORY_MB:1").json["allocation_requests"]) == 3
    assert len(w.get("resources=VCPU:1,MEMORY_MB:1&limit=2").json["allocation_requests"]) == 2


def test_unbounded_by_default(api):
    w = two_hosts_two_numas(api)
    assert len(w.get("resources=VCPU:1,MEMORY_MB:1").json["allocation_requests"]) == 4


def test_depth_first_exhausts_one_host_first(api):
    w = two_hosts_two_numas(api)
    hosts = hosts_of(w, w.get("resources=VCPU:1,MEMORY_MB:1").json)
    assert hosts[0] == hosts[1] != hosts[2] == hosts[3]


def test_a_limited_answer_spreads_over_hosts(api):
    # Schedulers weigh hosts: two candidates from one host would leave them
    # no choice.
    w = two_hosts_two_numas(api)
    assert sorted(hosts_of(w, w.get(QUERY).json)) == ["h1", "h2"]


@pytest.mark.parametrize("conf_overrides", [{"placement": {"max_allocation_candidates": 2}}])
def test_a_limit_spreads_over_what_depth_first_generation_kept(api):
    w = two_hosts_two_numas(api)
    kept = hosts_of(w, w.get("resources=VCPU:1,MEMORY_MB:1").json)
    assert len(kept) == 2 and len(set(kept)) == 1
    assert hosts_of(w, w.get("resources=VCPU:1,MEMORY_MB:1&limit=1").json) == kept[:1]


@pytest.mark.parametrize("conf_overrides", [
    {"placement": {"allocation_candidates_generation_strategy": "breadth-first"}}])
def test_breadth_first_takes_turns_between_hosts(api):
    w = two_hosts_two_numas(api)
    body = w.get(QUERY).json
    assert sorted(hosts_of(w, body)) == ["h1", "h2"]
    # Summaries describe exactly the trees used.
    assert {w.name(u)[:2] for u in body["provider_summaries"]} == {"h1", "h2"}


@pytest.mark.parametrize("conf_overrides", [
    {"placement": {"randomize_allocation_candidates": True}}])
def test_randomize_varies_the_answer(api):
    w = World(api)
    for name in ("a", "b", "c", "d"):
        w.add(name, inv={VCPU: 4})
    seen = set()
    for _ in range(40):
        body = w.get("resources=VCPU:1&limit=1").json
        [only] = body["allocation_requests"]
        seen.add(w.name(next(iter(only["allocations"]))))
    # Deterministic order would always give the same provider.
    assert len(seen) > 1
    everything = w.get("resources=VCPU:1").json["allocation_requests"]
    assert sorted(w.name(next(iter(ar["allocations"]))) for ar in everything) == [
        "a", "b", "c", "d"]


def test_without_randomize_the_answer_is_stable(api):
    w = World(api)
    for name in ("a", "b", "c", "d"):
        w.add(name, inv={VCPU: 4})
    answers = {tuple(next(iter(ar["allocations"]))
                     for ar in w.get("resources=VCPU:1").json["allocation_requests"])
               for _ in range(5)}
    assert len(answers) == 1
