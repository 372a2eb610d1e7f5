"""Well-formed GET /allocation_candidates queries with extreme values never get a 5xx.

The hostile fuzz (test_hostile_fuzz.py) sends malformed material, which is
mostly refused before the search runs.  Here every query is put together
the way a client writes one -- request groups of known classes, traits,
aggregates, a limit, a policy, and the extensions' parameters with the
``Allotment-Extensions`` header -- so that it reaches the search and the
encoder, with values at the edges: amounts and limits past 64 bits or past
4,300 digits, digits of other scripts, empty and repeated values.  The
world has nested trees, a sharing pool and a capacity past 64 bits.  Every
answer must be below 500 and every error in Placement's shape.
"""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.test_hostile_fuzz import send
from tests.api.test_resource_providers import create
from tests.api.test_wide_numbers import HUGE_RATIO, MAX_INT, inventory

AGG = "0bd4bd94-3b89-4e2e-9ad6-3fcb28d2e2d1"
CONSUMER = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
EXAMPLES = int(os.environ.get("ALLOTMENT_FUZZ_EXAMPLES", "60")) * 3

EDGES = ["0", "-1", str(MAX_INT), str(2 ** 63), "9" * 30, "9" * 5000, "%C2%B2",
         "%D9%A3", "", "1.5", "in:", "!", ",", "_Z"]
classes = st.sampled_from(["VCPU", "MEMORY_MB", "MEMORY_MB", "DISK_GB", "VGPU"])
resources = st.lists(st.tuples(classes, st.sampled_from(["1", "2", "100"])),
                     min_size=1, max_size=3, unique_by=lambda item: item[0]).map(
    lambda items: ",".join(f"{rc}:{n}" for rc, n in items))
traits = st.sampled_from(["HW_NUMA_ROOT", "!CUSTOM_GPU", "in:CUSTOM_GPU,HW_NUMA_ROOT",
                          "!HW_NUMA_ROOT"])
aggregates = st.sampled_from([AGG, "!" + AGG, f"in:{AGG}"])
named_suffixes = st.lists(st.sampled_from(["_A", "_B", "_NUMA"]), min_size=1, max_size=3,
                          unique=True)
flags = st.sampled_from(["true", "false"])
EXTRAS = {
    # No bound in the schema: past any answer it is no limit.
    "limit": st.sampled_from(["1", "3", "1000", str(2 ** 63), "9" * 30, "9" * 5000]),
    "root_required": traits,
    "explain": flags,
    "explain_limit": st.sampled_from(["1", "1000"]),
    "headroom": flags,
    "preempt": flags,
    "can_split": st.sampled_from(["VCPU", "VCPU,MEMORY_MB", "DISK_GB"]),
    "root_member_of": aggregates,
    "ignore_consumers": st.just(f"in:{CONSUMER}"),
}


@st.composite
def queries(draw) -> str:
    """A query as a client writes it, one of its values at an edge half the time."""
    pairs = [("resources", draw(resources))]
    suffixes = draw(st.one_of(st.just([]), named_suffixes))
    pairs += [(f"resources{suffix}", draw(resources)) for suffix in suffixes]
    for suffix in ["", *suffixes]:
        if draw(st.integers(0, 2)) == 0:
            pairs.append((f"required{suffix}", draw(traits)))
        if draw(st.integers(0, 3)) == 0:
            pairs.append((f"member_of{suffix}", draw(aggregates)))
    def some_suffixes() -> str:
        return ",".join(draw(st.lists(st.sampled_from(suffixes), min_size=1, unique=True)))

    if suffixes:
        # A policy, or the extension that isolates some groups only.
        policy = draw(st.sampled_from(["none", "isolate", None]))
        pairs.append(("group_policy", policy) if policy else ("isolate", some_suffixes()))
        if draw(st.integers(0, 3)) == 0:
            pairs.append(("same_subtree", some_suffixes()))
    for key in draw(st.lists(st.sampled_from(sorted(EXTRAS)), max_size=3, unique=True)):
        if key == "explain_limit":
            pairs.append(("explain", "true"))
        pairs.append((key, draw(EXTRAS[key])))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(pairs) - 1))
        key, value = pairs[at]
        edge = draw(st.sampled_from(EDGES))
        # An amount, or the whole value.
        pairs[at] = (key, f"{value.split(':')[0]}:{edge}" if key.startswith("resources")
                     and draw(st.booleans()) else edge)
    # Values are sent as written: the edges' percent-escapes stay escapes.
    return "&".join(f"{k}={quote(v, safe=',:!%')}" for k, v in pairs)


requests = st.tuples(
    queries(),
    st.sampled_from(["latest", "1.38", "1.36", "1.29", "1.10"]),
    st.sampled_from([{"Allotment-Extensions": "1"}, {}]))


@pytest.fixture
def world(api) -> None:
    for n in range(2):
        root = create(api, f"host{n}")
        inventory(api, root, {"DISK_GB": {"total": 100}})
        api.put(f"/resource_providers/{root}/aggregates", json={
            "resource_provider_generation": 1, "aggregates": [AGG]})
        for m in range(2):
            numa = create(api, f"host{n}-numa{m}", parent=root)
            inventory(api, numa, {"VCPU": {"total": 4}, "MEMORY_MB": {
                "total": MAX_INT, "max_unit": MAX_INT, "allocation_ratio": HUGE_RATIO}})
            gpu = create(api, f"host{n}-numa{m}-gpu", parent=numa)
            inventory(api, gpu, {"VGPU": {"total": 2}})
    pool = create(api, "pool")
    inventory(api, pool, {"DISK_GB": {"total": 1000}})
    api.put(f"/resource_providers/{pool}/traits", json={
        "resource_provider_generation": 1, "traits": ["MISC_SHARES_VIA_AGGREGATE"]})
    api.put(f"/resource_providers/{pool}/aggregates", json={
        "resource_provider_generation": 2, "aggregates": [AGG]})
    # At 1.26 the summaries show the classes asked for only.
    claim = api.get("/allocation_candidates?resources=VCPU:1&limit=1", version="1.26").json
    assert api.put(f"/allocations/{CONSUMER}", json={
        "allocations": claim["allocation_requests"][0]["allocations"],
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "PREEMPTIBLE"}).status == 204


def test_no_well_formed_candidates_query_gets_a_5xx(app, world) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(request=requests)
    def run(request) -> None:
        query, version, headers = request
        send(app, ("GET", "/allocation_candidates", query,
                   {"OpenStack-API-Version": f"placement {version}", **headers}, None))

    run()
