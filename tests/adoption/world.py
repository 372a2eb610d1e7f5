"""A world of the kind a real cloud holds, built through the API.

NUMA hosts (compute -> NUMA nodes -> PFs, one with an FPGA), a disk pool
and an address pool shared through aggregates, custom classes and traits,
several projects and users, consumers of each type whose allocations were
replaced a few times (generations above 0), allocations on nested and
shared providers, and the leftovers of deletes (a provider, a class and a
consumer that are gone).  Every name comes from :func:`uid`, so the same
world is the same rows on every backend.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tests.adoption.http import Api

_NS = uuid.UUID("0d7c3a50-5a8e-4f0e-9d1a-6a2b7f4e1c90")


def uid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


AGG_A, AGG_B, AGG_C = uid("agg-a"), uid("agg-b"), uid("agg-c")
CUSTOM_CLASSES = ("CUSTOM_FPGA", "CUSTOM_MAGIC_BEANS")
CUSTOM_TRAITS = ("CUSTOM_GOLD", "CUSTOM_PHYSNET_A", "CUSTOM_PHYSNET_B", "CUSTOM_NUMA",
                 "CUSTOM_UNUSED")
PROJECTS = tuple(uid(f"project-{i}") for i in range(3))
USERS = tuple(uid(f"user-{i}") for i in range(4))


@dataclass
class World:
    """What a read list needs to know of a world: every name in it."""

    providers: dict[str, str] = field(default_factory=dict)  # uuid -> name
    consumers: list[str] = field(default_factory=list)  # gone ones included
    classes: list[str] = field(default_factory=lambda: list(CUSTOM_CLASSES))
    traits: list[str] = field(default_factory=lambda: list(CUSTOM_TRAITS))
    aggregates: list[str] = field(default_factory=lambda: [AGG_A, AGG_B, AGG_C])
    projects: list[str] = field(default_factory=lambda: list(PROJECTS))
    users: list[str] = field(default_factory=lambda: list(USERS))

    def add_provider(self, api: Api, name: str, parent: str | None = None) -> str:
        rp = uid(name)
        api.provider(rp, name, parent)
        self.providers[rp] = name
        return rp


def _numa_host(api: Api, world: World, i: int) -> dict[str, str]:
    """One host: the root (local disk on most), two NUMA nodes, a PF each."""
    names = {"root": world.add_provider(api, f"host-{i}")}
    if i != 3:
        api.inventories(names["root"], {"DISK_GB": {
            "total": 500 + 100 * i, "reserved": 10 * i, "allocation_ratio": 1.0}})
    for n in range(2):
        numa = world.add_provider(api, f"host-{i}-numa-{n}", names["root"])
        pf = world.add_provider(api, f"host-{i}-numa-{n}-pf", numa)
        names[f"numa{n}"], names[f"pf{n}"] = numa, pf
        api.inventories(numa, {
            "VCPU": {"total": 8, "allocation_ratio": 4.0 if i == 0 else 16.0,
                     "max_unit": 8},
            "MEMORY_MB": {"total": 16384, "reserved": 512, "step_size": 256 if i == 2 else 1,
                          "min_unit": 256 if i == 2 else 1, "max_unit": 16384}})
        api.inventories(pf, {"SRIOV_NET_VF": {"total": 8, "max_unit": 4}})
        api.traits(numa, ["CUSTOM_NUMA"])
        api.traits(pf, ["HW_NIC_SRIOV", "CUSTOM_PHYSNET_A" if n == 0 else "CUSTOM_PHYSNET_B"])
    if i == 2:
        fpga = world.add_provider(api, "host-2-fpga", names["numa1"])
        api.inventories(fpga, {"CUSTOM_FPGA": {"total": 2, "max_unit": 1}})
        names["fpga"] = fpga
    traits = {0: ["HW_CPU_X86_AVX2"], 1: ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"],
              2: ["HW_CPU_X86_SSE42"], 3: ["CUSTOM_GOLD", "COMPUTE_STATUS_DISABLED"]}[i]
    # Written twice: the trait set of a root is replaced, not only set once.
    api.traits(names["root"], ["CUSTOM_UNUSED"])
    api.traits(names["root"], traits)
    api.aggregates(names["root"], {0: [AGG_A], 1: [AGG_A], 2: [AGG_B], 3: [AGG_B, AGG_C]}[i])
    return names


def build(api: Api) -> World:
    """Fill an empty Placement through ``api``; the world's names."""
    world = World()
    for name in CUSTOM_CLASSES:
        api.resource_class(name)
    api.resource_class("CUSTOM_GONE")
    api.ok("DELETE", "/resource_classes/CUSTOM_GONE")
    for name in CUSTOM_TRAITS:
        api.trait(name)
    hosts = [_numa_host(api, world, i) for i in range(4)]
    api.rename(hosts[3]["root"], "host-3-renamed")
    world.providers[hosts[3]["root"]] = "host-3-renamed"

    disk = world.add_provider(api, "disk-pool")
    api.inventories(disk, {"DISK_GB": {"total": 10000, "reserved": 100, "max_unit": 2000,
                                       "step_size": 10, "min_unit": 10}})
    api.traits(disk, ["MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD"])
    api.aggregates(disk, [AGG_A])
    ips = world.add_provider(api, "ip-pool")
    api.inventories(ips, {"IPV4_ADDRESS": {"total": 64}})
    api.traits(ips, ["MISC_SHARES_VIA_AGGREGATE"])
    api.aggregates(ips, [AGG_A, AGG_B])
    lonely = world.add_provider(api, "lonely")
    api.aggregates(lonely, [AGG_C])
    api.traits(lonely, ["CUSTOM_GOLD"])
    gone = world.add_provider(api, "gone")
    api.inventories(gone, {"VCPU": {"total": 1}})
    api.ok("DELETE", f"/resource_providers/{gone}")
    del world.providers[gone]

    _allocate(api, world, hosts, disk, ips)
    return world


def _allocate(api: Api, world: World, hosts: list[dict[str, str]], disk: str,
              ips: str) -> None:
    for c in range(9):
        consumer = uid(f"consumer-{c}")
        world.consumers.append(consumer)
        host = hosts[c % 4]
        numa = host[f"numa{c % 2}"]
        kind = "MIGRATION" if c == 8 else "INSTANCE"
        project, user = PROJECTS[c % 3], USERS[c % 4]
        # Replaced three times: the consumer's generation ends at 2, and
        # the amounts of the last write are what is left.
        for step in range(3):
            allocs: dict[str, dict[str, int]] = {
                numa: {"VCPU": 1 + step + c % 3, "MEMORY_MB": 1024 * (1 + c % 2)}}
            if c % 4 == 3 or c % 3 == 0:
                allocs[disk] = {"DISK_GB": 20 * (1 + step)}
            else:
                allocs[host["root"]] = {"DISK_GB": 5 + step + c}
            if c % 2 == 0:
                allocs[host[f"pf{c % 2}"]] = {"SRIOV_NET_VF": 1 + step % 2}
            if c in (1, 2, 5) and step > 0:
                allocs[ips] = {"IPV4_ADDRESS": 1}
            if c == 6:
                allocs[hosts[2]["fpga"]] = {"CUSTOM_FPGA": 1}
            api.allocate(consumer, allocs, project=project, user=user, consumer_type=kind)
    # Written before consumer types and consumer generations existed.
    old = uid("consumer-old")
    world.consumers.append(old)
    api.ok("PUT", f"/allocations/{old}", {
        "allocations": [{"resource_provider": {"uuid": hosts[1]["numa0"]},
                         "resources": {"VCPU": 2}}],
        "project_id": PROJECTS[2], "user_id": USERS[3]}, version="1.8")
    # A consumer that held allocations and gave them back.
    gone = uid("consumer-gone")
    world.consumers.append(gone)
    api.allocate(gone, {hosts[0]["numa1"]: {"VCPU": 1}}, project=PROJECTS[0], user=USERS[0])
    api.ok("DELETE", f"/allocations/{gone}")
    # A move: one POST swaps a migration's and an instance's allocations.
    moving, migration = uid("consumer-moving"), uid("consumer-migration")
    world.consumers += [moving, migration]
    api.allocate(moving, {hosts[0]["numa0"]: {"VCPU": 2, "MEMORY_MB": 2048}},
                 project=PROJECTS[1], user=USERS[1])
    api.ok("POST", "/allocations", {
        moving: {"allocations": {hosts[1]["numa1"]: {"resources": {"VCPU": 2,
                                                                    "MEMORY_MB": 2048}}},
                 "project_id": PROJECTS[1], "user_id": USERS[1],
                 "consumer_generation": api.consumer_generation(moving),
                 "consumer_type": "INSTANCE"},
        migration: {"allocations": {hosts[0]["numa0"]: {"resources": {"VCPU": 2,
                                                                      "MEMORY_MB": 2048}}},
                    "project_id": PROJECTS[1], "user_id": USERS[1],
                    "consumer_generation": None, "consumer_type": "MIGRATION"}})
    # An empty write for a consumer never seen: recorded at generation 0.
    empty = uid("consumer-empty")
    world.consumers.append(empty)
    api.ok("PUT", f"/allocations/{empty}", {
        "allocations": {}, "project_id": PROJECTS[2], "user_id": USERS[2],
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    world.consumers.append(uid("consumer-never"))
