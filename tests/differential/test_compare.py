"""The lane's comparison: canonical where order is unspecified, strict
everywhere else, and excusing only the known upstream defects."""

from __future__ import annotations

from tests.differential.compare import compare
from tests.differential.replay import Exchange

CN, NUMA, SS, CN2 = "cn", "numa", "ss", "cn2"


def answer(*cands: dict, roots: dict | None = None) -> dict:
    roots = roots or {}
    rps = {rp for c in cands for rp in c["allocations"]}
    return {"allocation_requests": list(cands),
            "provider_summaries": {rp: {"resources": {}, "traits": [],
                                        "root_provider_uuid": roots.get(rp, rp)}
                                   for rp in sorted(rps)}}


def ar(allocs: dict, mappings: dict) -> dict:
    return {"allocations": {rp: {"resources": res} for rp, res in allocs.items()},
            "mappings": mappings}


def get(body: dict, path: str = "/allocation_candidates?resources=DISK_GB:1",
        status: int = 200) -> Exchange:
    return Exchange("GET", path, "1.39", None, status, body)


POOLED = ar({SS: {"DISK_GB": 1}, NUMA: {"VCPU": 1}}, {"": [SS], "1": [NUMA]})
LOCAL = ar({CN: {"DISK_GB": 1}, NUMA: {"VCPU": 1}}, {"": [CN], "1": [NUMA]})
ROOTS = {NUMA: CN}


def test_order_does_not_matter():
    one, two = answer(POOLED, LOCAL, roots=ROOTS), answer(LOCAL, POOLED, roots=ROOTS)
    assert compare(get(one), get(two)) is None


def test_a_missing_or_extra_candidate_is_a_difference():
    both, local = answer(POOLED, LOCAL, roots=ROOTS), answer(LOCAL, roots=ROOTS)
    assert "candidates differ" in compare(get(both), get(local))
    # Allotment offering more is excused only when the extra candidates take
    # the unsuffixed group from sharing providers.
    assert "candidates differ" in compare(get(local), get(both))
    assert compare(get(local), get(both), unsuffixed={"DISK_GB": 1}, sharing={SS}) is None
    assert "candidates differ" in compare(get(local), get(both), unsuffixed={"DISK_GB": 1},
                                          sharing={"another"})


def test_status_and_error_codes_must_match():
    error = {"errors": [{"status": 400, "code": "placement.undefined_code"}]}
    assert compare(get(error, status=400), get(error, status=400)) is None
    assert "status" in compare(get(error, status=400), get(answer(LOCAL)))


def test_limited_answers_are_parts_of_the_whole_reaching_as_many_hosts():
    other = ar({CN2: {"DISK_GB": 1}}, {"": [CN2]})
    same_host = ar({CN: {"DISK_GB": 1}}, {"": [CN]})
    whole = answer(LOCAL, same_host, other, roots=ROOTS)
    one_host = answer(LOCAL, same_host, roots=ROOTS)
    two_hosts = answer(LOCAL, other, roots=ROOTS)
    limited = dict(limit=2, up_all=get(whole), al_all=get(whole))
    assert compare(get(one_host), get(two_hosts), **limited) is None
    assert "hosts" in compare(get(two_hosts), get(one_host), **limited)
    stranger = answer(LOCAL, ar({"elsewhere": {"DISK_GB": 1}}, {"": ["elsewhere"]}))
    assert "not part" in compare(get(two_hosts), get(stranger), **limited)
    assert "candidates" in compare(get(two_hosts), get(answer(LOCAL)), **limited)


def test_hosts_reached_are_the_trees_candidates_are_anchored_in():
    # Two hosts with local disk and two disk pools: one limited answer takes
    # both pools for one host, the other both hosts with their own disks.
    # Reaching a second pool reaches no second host.
    ss2 = "ss2"
    pooled2 = ar({ss2: {"DISK_GB": 1}, NUMA: {"VCPU": 1}}, {"": [ss2], "1": [NUMA]})
    local2 = ar({CN2: {"DISK_GB": 1, "VCPU": 1}}, {"": [CN2], "1": [CN2]})
    whole = answer(POOLED, pooled2, LOCAL, local2, roots=ROOTS)
    one_host_two_pools = answer(POOLED, pooled2, roots=ROOTS)
    # From 1.29 the summaries describe every provider of a tree used.
    one_host_two_pools["provider_summaries"][CN] = answer(LOCAL)["provider_summaries"][CN]
    two_hosts = answer(LOCAL, local2, roots=ROOTS)
    limited = dict(limit=2, up_all=get(whole), al_all=get(whole), sharing={SS, ss2})
    assert compare(get(one_host_two_pools), get(two_hosts), **limited) is None
    assert "hosts" in compare(get(two_hosts), get(one_host_two_pools), **limited)
    # A candidate of pools alone is anchored in a pool's own tree.
    alone = ar({SS: {"DISK_GB": 1}}, {"": [SS]})
    whole = answer(alone, POOLED, roots=ROOTS)
    limited = dict(limit=1, up_all=get(whole), al_all=get(whole), sharing={SS})
    assert "hosts" not in (compare(get(answer(alone, roots=ROOTS)),
                                   get(answer(POOLED, roots=ROOTS)), **limited) or "")


def _pre_129(*cands: dict, listed: tuple[str, ...]) -> dict:
    # Before 1.29 summaries carry no root; the lane knows the trees.
    return {"allocation_requests": list(cands),
            "provider_summaries": {rp: {"resources": {}} for rp in listed}}


def test_limited_summaries_are_checked_tree_by_tree():
    n0, n1 = ar({"n0": {"VCPU": 1}}, {}), ar({"n1": {"VCPU": 1}}, {})
    whole = _pre_129(n0, n1, listed=("n0", "n1"))
    trees = {"n0": CN, "n1": CN}
    sibling_kept = _pre_129(n0, listed=("n0", "n1"))
    sibling_dropped = _pre_129(n0, listed=("n0",))
    path = "/allocation_candidates?resources=VCPU:1&limit=1"
    ok = compare(get(sibling_kept, path), get(sibling_kept, path), up_all=get(whole),
                 al_all=get(whole), limit=1, tree_roots=trees)
    assert ok is None
    problem = compare(get(sibling_kept, path), get(sibling_dropped, path), up_all=get(whole),
                      al_all=get(whole), limit=1, tree_roots=trees)
    assert problem and problem.startswith("allotment's limited answer: summaries of tree cn")


def _with(status: int = 200, reason: str = "OK", **headers: str) -> Exchange:
    return Exchange("POST", "/resource_providers", "1.39", None, status, {}, None,
                    {k.replace("_", "-"): v for k, v in headers.items()}, reason)


def test_headers_are_compared():
    base = {"location": "$URL/resource_providers/x", "content_type": "application/json",
            "cache_control": "no-cache", "last_modified": "Wed, 25 Nov 2026 09:00:00 GMT",
            "openstack_api_version": "placement 1.39", "vary": "openstack-api-version"}
    assert compare(_with(**base), _with(**base)) is None
    other_time = {**base, "last_modified": "Thu, 26 Nov 2026 10:11:12 GMT"}
    assert compare(_with(**base), _with(**other_time)) is None
    for name, value in (("location", "/resource_providers/x"),
                        ("content_type", "text/html; charset=UTF-8"),
                        ("cache_control", None), ("last_modified", None),
                        ("last_modified", "2026-11-25T09:00:00Z"),
                        ("openstack_api_version", "placement 1.38"), ("vary", None)):
        changed = {k: v for k, v in {**base, name: value}.items() if v is not None}
        problem = compare(_with(**base), _with(**changed))
        assert problem and problem.startswith("headers differ"), (name, value)
    assert compare(_with(**base), _with(201, "Created", **base)).startswith("status")
    assert "status line" in compare(_with(**base), _with(200, "Okay", **base))


def test_error_headers_titles_and_allow():
    err = {"errors": [{"status": 405, "title": "Method Not Allowed", "code": "x"}]}
    up = Exchange("DELETE", "/resource_providers", "1.39", None, 405, err, None,
                  {"allow": "GET, POST"}, "Method Not Allowed")
    # allotment's errors also vary by microversion (docs/compatibility.md).
    al = Exchange("DELETE", "/resource_providers", "1.39", None, 405, err, None,
                  {"allow": "GET, POST", "vary": "openstack-api-version"}, "Method Not Allowed")
    assert compare(up, al) is None
    al.headers["allow"] = "GET"
    assert "allow" in compare(up, al)
    al.headers["allow"] = "GET, POST"
    al.answer = {"errors": [{"status": 405, "title": "Not Allowed", "code": "x"}]}
    assert "titles" in compare(up, al)
