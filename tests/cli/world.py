"""A small cloud seeded through the client, shared by the CLI and web tests:
two compute hosts (one with a NUMA node and a GPU), a sharing disk pool and
consumers of two types."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from allotment.client import PlacementClient

AGG = "5d8a1a9c-6c55-4a8e-9d3a-0c6b1f0e7a11"


@dataclass
class World:
    host1: str
    numa: str
    gpu: str
    host2: str
    pool: str
    instance: str
    migration: str


def seed(client: PlacementClient) -> World:
    p = client.providers
    host1 = p.create("compute-1")
    numa = p.create("compute-1_numa0", parent_provider_uuid=host1.uuid)
    gpu = p.create("compute-1_gpu0", parent_provider_uuid=numa.uuid)
    host2 = p.create("compute-2")
    pool = p.create("shared-disk")
    inv = client.inventories
    inv.set(host1.uuid, {"DISK_GB": {"total": 100}}, p.get(host1.uuid).generation)
    inv.set(numa.uuid, {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 65536}},
            p.get(numa.uuid).generation)
    inv.set(gpu.uuid, {"VGPU": {"total": 4}}, p.get(gpu.uuid).generation)
    inv.set(host2.uuid, {"VCPU": {"total": 8, "allocation_ratio": 2.0},
                         "MEMORY_MB": {"total": 16384}}, p.get(host2.uuid).generation)
    inv.set(pool.uuid, {"DISK_GB": {"total": 2000, "reserved": 100}},
            p.get(pool.uuid).generation)
    client.traits.ensure("CUSTOM_GOLD")
    client.provider_traits.set(gpu.uuid, {"CUSTOM_GOLD"}, p.get(gpu.uuid).generation)
    client.provider_traits.set(numa.uuid, {"HW_CPU_X86_AVX2"}, p.get(numa.uuid).generation)
    client.provider_traits.set(pool.uuid, {"MISC_SHARES_VIA_AGGREGATE"},
                               p.get(pool.uuid).generation)
    for rp in (host1.uuid, host2.uuid, pool.uuid):
        client.aggregates.set(rp, {AGG}, p.get(rp).generation)
    instance, migration = str(uuid.uuid4()), str(uuid.uuid4())
    client.allocations.put(instance, {numa.uuid: {"resources": {"VCPU": 4, "MEMORY_MB": 8192}},
                                      gpu.uuid: {"resources": {"VGPU": 1}},
                                      pool.uuid: {"resources": {"DISK_GB": 50}}},
                           project_id="proj", user_id="alice", consumer_type="INSTANCE")
    client.allocations.put(migration, {host2.uuid: {"resources": {"VCPU": 2}}},
                           project_id="proj", user_id="bob", consumer_type="MIGRATION")
    return World(host1.uuid, numa.uuid, gpu.uuid, host2.uuid, pool.uuid, instance, migration)
