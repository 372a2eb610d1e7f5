"""Writes of every kind made through the service that holds the database:
a new tree, a class, a trait, inventory changes, claims, a move, a delete
of a provider upstream made.  :class:`World` learns each new name, so the
read list afterwards covers them."""

from __future__ import annotations

from tests.adoption.http import Api
from tests.adoption.world import AGG_A, AGG_C, PROJECTS, USERS, World, uid

NEW_CLASS, NEW_TRAIT = "CUSTOM_NEW_ACCEL", "CUSTOM_NEW_TRAIT"


def apply(api: Api, world: World, tag: str = "later") -> None:
    """Change ``world`` through ``api`` (once per world); ``tag`` names
    what is new."""
    new_class, new_trait = f"{NEW_CLASS}_{tag.upper()}", f"{NEW_TRAIT}_{tag.upper()}"
    api.resource_class(new_class)
    api.trait(new_trait)
    world.classes.append(new_class)
    world.traits.append(new_trait)

    root = world.add_provider(api, f"host-{tag}")
    numa = world.add_provider(api, f"host-{tag}-numa-0", root)
    accel = world.add_provider(api, f"host-{tag}-accel", numa)
    api.inventories(root, {"DISK_GB": {"total": 800}})
    api.inventories(numa, {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 32768}})
    api.inventories(accel, {new_class: {"total": 4, "max_unit": 2}})
    api.traits(root, [new_trait, "HW_CPU_X86_AVX2"])
    api.aggregates(root, [AGG_A])

    # Inventory changes on providers upstream made.
    api.inventories(uid("host-1-numa-0"), {
        "VCPU": {"total": 12, "allocation_ratio": 8.0, "max_unit": 12},
        "MEMORY_MB": {"total": 16384, "reserved": 1024, "max_unit": 16384}})
    disk = uid("disk-pool")
    api.inventories(disk, {"DISK_GB": {"total": 12000, "reserved": 200, "max_unit": 2000,
                                       "step_size": 10, "min_unit": 10}})
    api.inventories(uid("lonely"), {"VCPU": {"total": 4}})
    api.traits(uid("host-2"), ["HW_CPU_X86_SSE42", new_trait])
    api.aggregates(uid("host-3"), [uid("agg-b")])
    api.aggregates(uid("lonely"), [AGG_C, uid(f"agg-{tag}")])
    world.aggregates.append(uid(f"agg-{tag}"))
    api.rename(uid("host-0"), f"host-0-{tag}")
    world.providers[uid("host-0")] = f"host-0-{tag}"

    # Claims: a new consumer across the new tree and the shared pool, one
    # of upstream's consumers replaced, one given back, the move undone.
    claim = uid(f"consumer-{tag}")
    world.consumers.append(claim)
    api.allocate(claim, {numa: {"VCPU": 2, "MEMORY_MB": 4096}, accel: {new_class: 1},
                         disk: {"DISK_GB": 50}}, project=PROJECTS[0], user=USERS[1])
    api.allocate(uid("consumer-0"), {uid("host-0-numa-0"): {"VCPU": 3, "MEMORY_MB": 512}},
                 project=PROJECTS[0], user=USERS[0])
    api.ok("DELETE", f"/allocations/{uid('consumer-1')}")
    moving, migration = uid("consumer-moving"), uid("consumer-migration")
    api.ok("POST", "/allocations", {
        moving: {"allocations": {uid("host-0-numa-0"): {"resources": {
            "VCPU": 2, "MEMORY_MB": 2048}}}, "project_id": PROJECTS[1], "user_id": USERS[1],
            "consumer_generation": api.consumer_generation(moving),
            "consumer_type": "INSTANCE"},
        migration: {"allocations": {}, "project_id": PROJECTS[1], "user_id": USERS[1],
                    "consumer_generation": api.consumer_generation(migration),
                    "consumer_type": "MIGRATION"}})
    # A provider upstream made, with nothing on it, goes.
    pf = uid("host-3-numa-0-pf")
    api.ok("DELETE", f"/resource_providers/{pf}")
    del world.providers[pf]
