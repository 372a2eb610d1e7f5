"""The worlds both services are loaded with, and the questions asked of them.

A world is a list of trees; a tree is a list of providers, parents first.
Every name and UUID is derived from the shape and the host number, so the
two services hold byte-for-byte the same world.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

_NS = uuid.UUID("0b7b3c9e-51a4-4c55-9a8e-2f7d3c1e6a42")


def uid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


@dataclass
class Provider:
    name: str
    parent: str | None
    inventories: dict[str, dict] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)

    @property
    def uuid(self) -> str:
        return uid(self.name)


@dataclass
class Query:
    """One scenario: a path asked of both services."""

    label: str
    path: str


@dataclass
class World:
    shape: str
    hosts: int
    trees: list[list[Provider]]
    custom_traits: list[str]
    custom_classes: list[str]
    queries: list[Query]
    # What one claim asks for, as a candidates query string.
    claim: str

    @property
    def providers(self) -> int:
        return sum(len(t) for t in self.trees)

    def root(self, host: int) -> str:
        return uid(f"{self.shape}-cn{host}")


def _inv(total: int, **extra) -> dict:
    return {"total": total, **extra}


_COMPUTE = {"VCPU": _inv(64, allocation_ratio=4.0),
            "MEMORY_MB": _inv(262144, reserved=512),
            "DISK_GB": _inv(2000)}
_PLAIN = "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10"


def _limits(label: str, query: str) -> list[Query]:
    path = "/allocation_candidates?" + query
    return [Query(f"{label}", path),
            Query(f"{label}, limit=1000", path + "&limit=1000"),
            Query(f"{label}, limit=10", path + "&limit=10")]


def flat(hosts: int) -> World:
    trees = [[Provider(f"flat-cn{h}", None, dict(_COMPUTE),
                       ["HW_CPU_X86_AVX2"] if h % 2 else [])] for h in range(hosts)]
    root = uid("flat-cn0")
    queries = [
        *_limits("flat: VCPU, MEMORY_MB, DISK_GB", _PLAIN),
        Query("flat: in_tree=<one root>", f"/allocation_candidates?{_PLAIN}&in_tree={root}"),
        Query("flat: required=HW_CPU_X86_AVX2, limit=10",
              f"/allocation_candidates?{_PLAIN}&required=HW_CPU_X86_AVX2&limit=10"),
        Query("GET /resource_providers", "/resource_providers"),
        Query("GET /resource_providers?resources=VCPU:1,MEMORY_MB:512",
              "/resource_providers?resources=VCPU:1,MEMORY_MB:512"),
        Query("GET /resource_providers?in_tree=<root>", f"/resource_providers?in_tree={root}"),
        Query("GET /resource_providers/{uuid}", f"/resource_providers/{root}"),
        Query("GET /resource_providers/{uuid}/usages", f"/resource_providers/{root}/usages"),
    ]
    return World("flat", hosts, trees, [], [], queries, _PLAIN + "&limit=10")


def numa(hosts: int) -> World:
    """Root with disk, 2 NUMA nodes, 2 PFs and 1 GPU under each node."""
    trees = []
    for h in range(hosts):
        cn = f"numa-cn{h}"
        tree = [Provider(cn, None, {"DISK_GB": _inv(2000)}, ["COMPUTE_VOLUME_MULTI_ATTACH"])]
        for n in range(2):
            node = f"{cn}-n{n}"
            tree.append(Provider(node, cn, {"VCPU": _inv(32, allocation_ratio=4.0),
                                            "MEMORY_MB": _inv(131072)}, ["HW_NUMA_ROOT"]))
            for p in range(2):
                tree.append(Provider(f"{node}-pf{p}", node, {"SRIOV_NET_VF": _inv(8)},
                                     [f"CUSTOM_PHYSNET{p}"]))
            tree.append(Provider(f"{node}-gpu", node, {"VGPU": _inv(4)}))
        trees.append(tree)
    root = uid("numa-cn0")
    granular = ("resources=DISK_GB:10&resources_CPU=VCPU:2,MEMORY_MB:1024"
                "&resources_NET=SRIOV_NET_VF:1&required_NET=CUSTOM_PHYSNET0"
                "&same_subtree=_CPU,_NET&group_policy=none")
    queries = [
        *_limits("numa: VCPU, MEMORY_MB, DISK_GB", _PLAIN),
        *_limits("numa: granular CPU + VF same_subtree", granular),
        *_limits("numa: VCPU, MEMORY_MB + VGPU group",
                 "resources=VCPU:1,MEMORY_MB:512&resources_G=VGPU:1&group_policy=none"),
        Query("numa: in_tree=<one root>", f"/allocation_candidates?{_PLAIN}&in_tree={root}"),
        Query("GET /resource_providers?resources=VCPU:1,MEMORY_MB:512",
              "/resource_providers?resources=VCPU:1,MEMORY_MB:512"),
        Query("GET /resource_providers?in_tree=<root>", f"/resource_providers?in_tree={root}"),
    ]
    return World("numa", hosts, trees, ["CUSTOM_PHYSNET0", "CUSTOM_PHYSNET1"], [],
                 queries, _PLAIN + "&limit=10")


def sharing(hosts: int) -> World:
    """Diskless compute hosts; one shared storage pool per 50 hosts."""
    pools = max(1, hosts // 50)
    trees = [[Provider(f"sharing-ss{s}", None, {"DISK_GB": _inv(200000)},
                       ["MISC_SHARES_VIA_AGGREGATE"], [uid(f"sharing-agg{s}")])]
             for s in range(pools)]
    trees += [[Provider(f"sharing-cn{h}", None,
                        {"VCPU": _inv(64, allocation_ratio=4.0),
                         "MEMORY_MB": _inv(262144, reserved=512)},
                        [], [uid(f"sharing-agg{h % pools}")])] for h in range(hosts)]
    agg = uid("sharing-agg0")
    queries = [
        *_limits("sharing: VCPU, MEMORY_MB, shared DISK_GB", _PLAIN),
        Query("sharing: member_of=<one aggregate>, limit=10",
              f"/allocation_candidates?{_PLAIN}&member_of={agg}&limit=10"),
    ]
    world = World("sharing", hosts, trees, [], [], queries, _PLAIN + "&limit=10")
    return world


def wide(hosts: int) -> World:
    """Compute hosts with 8 single-unit devices each: the isolate explosion."""
    trees = []
    for h in range(hosts):
        cn = f"wide-cn{h}"
        tree = [Provider(cn, None, dict(_COMPUTE))]
        tree += [Provider(f"{cn}-d{d}", cn, {"CUSTOM_DEVICE": _inv(1)}) for d in range(8)]
        trees.append(tree)
    two = ("resources=VCPU:1&resources1=CUSTOM_DEVICE:1&resources2=CUSTOM_DEVICE:1"
           "&group_policy=isolate")
    four = ("resources=VCPU:1&resources1=CUSTOM_DEVICE:1&resources2=CUSTOM_DEVICE:1"
            "&resources3=CUSTOM_DEVICE:1&resources4=CUSTOM_DEVICE:1&group_policy=isolate")
    queries = [*_limits("wide: 2 isolated device groups", two),
               *_limits("wide: 4 isolated device groups", four)]
    if hosts > 100:
        # 1,680 candidates per host: at 1,000 hosts the unlimited answer is
        # 1.7 million candidates (about a gigabyte of JSON), which neither
        # service returns within the read timeout; it is left out.
        queries.remove(queries[3])
    return World("wide", hosts, trees, [], ["CUSTOM_DEVICE"], queries,
                 "resources=VCPU:1&resources1=CUSTOM_DEVICE:1&limit=10")


SHAPES = {"flat": flat, "numa": numa, "sharing": sharing, "wide": wide}
