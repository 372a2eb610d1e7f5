"""Every read a client can make of a world, recorded and compared.

An answer is its status, its body and the headers a client may act on.
Bodies are compared order-free where Placement leaves the order unspecified
(tests/differential/compare.py), allocation candidates as sets of
candidates plus their provider summaries.  ``Last-Modified`` is compared
wherever the service that answered first gives the same value twice in a
row: where it takes the time of the request instead of a stored time, it
varies by itself and says nothing about the data.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlencode

import requests

from tests.adoption.world import AGG_A, AGG_B, AGG_C, World, uid
from tests.differential.compare import candidates, canonical, summaries

VERSIONS = ("1.0", "1.26", "1.29", "latest")
# Each kind of read at the microversions where its answer changes shape:
# a provider's own reads at the first and the last, the listings also at
# 1.26 (1.14's trees, 1.18-1.22's filters), candidates where nested
# providers join in (1.29) and on either side.
_PROVIDER_VERSIONS = ("1.0", "latest")
_LIST_VERSIONS = ("1.0", "1.26", "latest")
_CANDIDATE_VERSIONS = ("1.26", "1.29", "latest")
HEADERS = ("content-type", "cache-control", "last-modified", "openstack-api-version")
Key = tuple[str, str]  # (microversion, path)


@dataclass(frozen=True)
class Answer:
    status: int
    body: object
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        return dict(self.headers).get(name)


def _q(path: str, **params: str) -> str:
    return f"{path}?{urlencode(params, safe=',:!')}"


def provider_paths(world: World) -> list[str]:
    out = []
    for rp in sorted(world.providers):
        base = f"/resource_providers/{rp}"
        out += [base, base + "/inventories", base + "/inventories/VCPU",
                base + "/traits", base + "/aggregates", base + "/usages",
                base + "/allocations"]
    return out


def list_paths(world: World) -> list[str]:
    host0, numa = uid("host-0"), uid("host-1-numa-0")
    rp = "/resource_providers"
    out = [rp, _q(rp, name="host-1"), _q(rp, uuid=host0), _q(rp, member_of=AGG_A),
           _q(rp, member_of=f"in:{AGG_A},{AGG_B}"), _q(rp, member_of=f"!{AGG_C}"),
           _q(rp, resources="VCPU:4"), _q(rp, resources="DISK_GB:100"),
           _q(rp, resources="VCPU:1,MEMORY_MB:1024"), _q(rp, resources="CUSTOM_FPGA:1"),
           _q(rp, required="CUSTOM_GOLD"), _q(rp, required="!CUSTOM_GOLD"),
           _q(rp, required="HW_CPU_X86_AVX2,!COMPUTE_STATUS_DISABLED"),
           _q(rp, required="in:CUSTOM_GOLD,HW_NIC_SRIOV"), _q(rp, in_tree=host0),
           _q(rp, in_tree=numa), _q(rp, resources="VCPU:1", member_of=AGG_A),
           _q(rp, resources="NOT_A_CLASS:1"), _q(rp, required="CUSTOM_NOPE")]
    out += ["/", "/resource_classes", "/resource_classes/VCPU", "/resource_classes/CUSTOM_GONE"]
    out += [f"/resource_classes/{name}" for name in world.classes]
    out += ["/traits", _q("/traits", name="startswith:CUSTOM_"),
            _q("/traits", name="in:CUSTOM_GOLD,HW_NIC_SRIOV"), _q("/traits", associated="true"),
            _q("/traits", associated="false"), "/traits/CUSTOM_NOPE"]
    out += [f"/traits/{name}" for name in world.traits]
    out += [f"/allocations/{c}" for c in world.consumers]
    for i, project in enumerate(world.projects):
        out += [_q("/usages", project_id=project),
                _q("/usages", project_id=project, user_id=world.users[i]),
                _q("/usages", project_id=project, consumer_type="INSTANCE"),
                _q("/usages", project_id=project, consumer_type="MIGRATION"),
                _q("/usages", project_id=project, consumer_type="all"),
                _q("/usages", project_id=project, consumer_type="unknown")]
    return out


def candidate_paths(world: World) -> list[str]:
    ac = "/allocation_candidates"
    return [
        _q(ac, resources="VCPU:1,MEMORY_MB:1024"),
        _q(ac, resources="DISK_GB:10"),
        _q(ac, resources="VCPU:1,MEMORY_MB:1024,DISK_GB:20"),
        _q(ac, resources="VCPU:1,MEMORY_MB:1024,DISK_GB:20,IPV4_ADDRESS:1"),
        _q(ac, resources="VCPU:1", required="CUSTOM_GOLD"),
        _q(ac, resources="VCPU:1", member_of=AGG_B),
        _q(ac, resources="VCPU:1,MEMORY_MB:512", required="!COMPUTE_STATUS_DISABLED"),
        _q(ac, resources="VCPU:1,CUSTOM_FPGA:1"),
        _q(ac, resources="VCPU:1", root_required="CUSTOM_GOLD"),
        _q(ac, resources="VCPU:1", in_tree=uid("host-0")),
        _q(ac, resources="SRIOV_NET_VF:5"),
        _q(ac, resources="NOT_A_CLASS:1"),
        _q(ac, resources1="VCPU:1,MEMORY_MB:1024", resources2="SRIOV_NET_VF:1",
           required2="CUSTOM_PHYSNET_A", group_policy="isolate"),
        _q(ac, resources="VCPU:1,MEMORY_MB:1024", resources1="SRIOV_NET_VF:1",
           group_policy="none"),
        _q(ac, resources_COMPUTE="VCPU:1", resources_NET="SRIOV_NET_VF:1",
           same_subtree="_COMPUTE,_NET", group_policy="none"),
    ]


def keys(world: World, versions: tuple[str, ...] = VERSIONS) -> list[Key]:
    """Every read of ``world`` at those of ``versions`` that matter to it."""
    out = []
    for kind_versions, kind_paths in ((_PROVIDER_VERSIONS, provider_paths(world)),
                                      (_LIST_VERSIONS, list_paths(world)),
                                      (_CANDIDATE_VERSIONS, candidate_paths(world))):
        wanted = [v for v in versions if v in kind_versions or versions == ("latest",)]
        out += [(v, p) for v in wanted for p in kind_paths]
    return out


def get(url: str, version: str, path: str,
        session: requests.Session | None = None) -> Answer:
    """One read of ``path`` at ``version``."""
    resp = (session or requests).get(url + path, timeout=300, headers={
        "X-Auth-Token": "admin", "Accept": "application/json",
        "OpenStack-API-Version": f"placement {version}"})
    try:
        body = resp.json() if resp.content else None
    except ValueError:
        body = resp.text
    headers = tuple((h, resp.headers[h]) for h in HEADERS if h in resp.headers)
    return Answer(resp.status_code, body, headers)


def record(url: str, world: World, versions: tuple[str, ...] = VERSIONS) -> dict[Key, Answer]:
    """The answers to :func:`keys`, from ``url``."""
    wanted = keys(world, versions)
    with ThreadPoolExecutor(4) as pool:
        answers = pool.map(lambda key: get(url, *key), wanted)
        return dict(zip(wanted, answers, strict=True))


def record_twice(url: str, world: World,
                 versions: tuple[str, ...] = VERSIONS) -> tuple[dict[Key, Answer], set[Key]]:
    """The answers, and the reads whose ``Last-Modified`` the service
    varies by itself (different a second later, nothing written between).
    The second round leaves out microversions before 1.15, which have no
    ``Last-Modified``."""
    first = record(url, world, versions)
    time.sleep(1.1)
    second = record(url, world, tuple(v for v in versions if v not in ("1.0", "1.14")))
    return first, {key for key, answer in second.items()
                   if answer.header("last-modified") != first[key].header("last-modified")}


def _error(error: dict) -> dict:
    """An error without its request id, its detail as the words it holds:
    a schema error's detail prints the schema as a dict whose key order is
    not the same in two programs, and says nothing of the data."""
    out = {k: v for k, v in error.items() if k != "request_id"}
    if isinstance(out.get("detail"), str):
        out["detail"] = sorted(re.findall(r"\w+", out["detail"]))
    return out


def _comparable(path: str, answer: Answer) -> object:
    body = answer.body
    if isinstance(body, dict) and "errors" in body:
        return canonical({"errors": [_error(e) for e in body["errors"]]})
    if answer.status == 200 and path.startswith("/allocation_candidates"):
        found = candidates(body)
        return {"candidates": found, "duplicates": len(body["allocation_requests"]) - len(found),
                "summaries": summaries(body),
                "other": sorted(set(body) - {"allocation_requests", "provider_summaries"})}
    return canonical(body)


def differences(expected: dict[Key, Answer], actual: dict[Key, Answer],
                varying: set[Key] = frozenset(), *,
                upstream_side: str | None = None) -> list[str]:
    """Each read answered differently, with both answers.

    ``upstream_side`` ("expected" or "actual") names upstream's answers:
    where upstream fails with a 5xx and the other service answers, there
    is no answer of upstream's to keep (16.0.0 on PostgreSQL fails
    ``GET /usages`` from 1.38 on with a GROUP BY error)."""
    out = []
    for key, want in expected.items():
        got = actual[key]
        version, path = key
        theirs = {"expected": want, "actual": got}.get(upstream_side or "")
        ours = got if upstream_side == "expected" else want
        if theirs is not None and theirs.status >= 500 and ours.status < 500:
            continue
        problems = []
        if want.status != got.status:
            problems.append(f"status {want.status} != {got.status}")
        elif _comparable(path, want) != _comparable(path, got):
            problems.append("bodies differ")
        for name in HEADERS:
            if name == "last-modified" and key in varying:
                continue
            if want.header(name) != got.header(name):
                problems.append(f"{name}: {want.header(name)!r} != {got.header(name)!r}")
        if problems:
            out.append(f"GET {path} at {version}: {'; '.join(problems)}\n"
                       f"  before: {want.status} {want.body!r:.1500}\n"
                       f"  after:  {got.status} {got.body!r:.1500}")
    return out
