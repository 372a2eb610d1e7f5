"""ProviderTree <-> service: reading trees, syncing changes, a tree's allocations."""

from __future__ import annotations

import pytest

from allotment.client import exceptions
from tests.client.helpers import make_sharing_provider, new_uuid, recorded


def test_ensure_root_creates_then_finds_the_root(placement):
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    assert tree.get_provider_uuids() == [root]
    assert placement.providers.get(root).name == "host1"
    # By name only, the existing provider is found, not duplicated.
    again = placement.get_provider_tree_and_ensure_root("host1")
    assert again.root_uuids() == [root]
    assert len(placement.providers.list(name="host1")) == 1


def test_tree_includes_children_data_and_sharing_providers(placement):
    agg = new_uuid()
    shared = make_sharing_provider(placement, "nfs", agg, {"DISK_GB": {"total": 1000}})
    make_sharing_provider(placement, "elsewhere", new_uuid(), {"DISK_GB": {"total": 5}})
    root = placement.providers.create("host1")
    child = placement.providers.create("host1_gpu0", parent_provider_uuid=root.uuid)
    placement.inventories.set(child.uuid, {"VGPU": {"total": 4}}, child.generation)
    placement.aggregates.set(root.uuid, [agg], root.generation)

    tree = placement.get_provider_tree_and_ensure_root("host1", root.uuid)
    assert tree.get_provider_uuids() == [root.uuid, child.uuid, shared]
    assert tree.data("host1_gpu0").inventory["VGPU"]["total"] == 4
    assert tree.data("host1").aggregates == {agg}
    assert tree.data("nfs").traits == {"MISC_SHARES_VIA_AGGREGATE"}
    assert tree.data("nfs").parent_uuid is None
    assert tree.data("host1_gpu0").generation == 1


def test_sync_creates_sets_and_deletes_in_order(placement):
    rec = recorded(placement)
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    tree.update_inventory(root, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 2048}})
    tree.add_traits(root, "HW_CPU_X86_AVX2", "CUSTOM_HOST_GOLD")
    agg = new_uuid()
    tree.add_aggregates(root, agg)
    numa = tree.new_child("host1_numa0", root)
    gpu = tree.new_child("host1_numa0_gpu0", numa)
    tree.update_inventory(gpu, {"CUSTOM_VGPU_TYPE_A": {"total": 4, "max_unit": 2}})
    tree.add_traits(gpu, "CUSTOM_GPU_NVIDIA")
    rec.log.clear()
    placement.update_from_provider_tree(tree)

    writes = [(m, p) for m, p, _ in rec.writes()]
    # Custom names first, then parents before children, inventory before traits.
    assert writes.index(("PUT", "/resource_classes/CUSTOM_VGPU_TYPE_A")) < \
        writes.index(("POST", "/resource_providers"))
    creates = [p for m, p in writes if m == "POST" and p == "/resource_providers"]
    assert len(creates) == 2
    assert writes.index(("PUT", f"/resource_providers/{root}/inventories")) < \
        writes.index(("PUT", f"/resource_providers/{root}/traits"))

    fresh = placement.get_provider_tree_and_ensure_root("host1", root)
    assert fresh.get_provider_uuids() == [root, numa, gpu]
    assert not fresh.has_inventory_changed(root, {"VCPU": {"total": 8},
                                                  "MEMORY_MB": {"total": 2048}})
    assert fresh.data(gpu).inventory["CUSTOM_VGPU_TYPE_A"]["max_unit"] == 2
    assert fresh.data(root).traits == {"HW_CPU_X86_AVX2", "CUSTOM_HOST_GOLD"}
    assert fresh.data(root).aggregates == {agg}
    assert fresh.data(gpu).traits == {"CUSTOM_GPU_NVIDIA"}

    # Nothing changed: nothing is written.
    rec.log.clear()
    placement.update_from_provider_tree(fresh)
    assert rec.writes() == []

    # Remove the NUMA subtree: the GPU goes before its parent.
    fresh.remove(numa)
    fresh.update_inventory(root, {"VCPU": {"total": 16}})
    rec.log.clear()
    placement.update_from_provider_tree(fresh)
    deletes = [p for m, p, _ in rec.writes() if m == "DELETE"]
    assert deletes == [f"/resource_providers/{gpu}", f"/resource_providers/{numa}"]
    assert [p.uuid for p in placement.providers.in_tree(root)] == [root]
    assert set(placement.inventories.get(root).inventories) == {"VCPU"}


def test_capacity_leaves_one_provider_before_it_reaches_another(placement):
    rec = recorded(placement)
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    child = tree.new_child("host1_pool", root)
    tree.update_inventory(child, {"DISK_GB": {"total": 100}})
    placement.update_from_provider_tree(tree)
    # Move the disk from the child to the root: the child (later in
    # top-down order) must shrink before the root grows.
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    tree.update_inventory(child, {})
    tree.update_inventory(root, {"DISK_GB": {"total": 100}})
    rec.log.clear()
    placement.update_from_provider_tree(tree)
    puts = [p for m, p, _ in rec.writes() if m == "PUT"]
    assert puts == [f"/resource_providers/{child}/inventories",
                    f"/resource_providers/{root}/inventories"]


def test_generation_conflict_is_refreshed_and_retried_once(placement, connect):
    other = connect()
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    # Someone else changes the provider after we read it.
    gen = other.providers.get(root).generation
    other.provider_traits.set(root, ["HW_CPU_X86_SSE"], gen)
    rec = recorded(placement)
    tree.update_inventory(root, {"VCPU": {"total": 4}})
    placement.update_from_provider_tree(tree)
    statuses = [(m, s) for m, p, s in rec.log if p.endswith("/inventories") and m == "PUT"]
    assert statuses == [("PUT", 409), ("PUT", 200)]
    assert placement.inventories.get(root).inventories["VCPU"]["total"] == 4


def test_second_generation_conflict_is_raised_and_the_cache_recovers(placement, connect):
    other = connect()
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    tree.update_inventory(root, {"VCPU": {"total": 4}})
    rec = recorded(placement)

    def interfere(method: str, path: str) -> None:
        if method == "PUT" and path.endswith("/inventories"):
            gen = other.providers.get(root).generation
            other.aggregates.set(root, [new_uuid()], gen)

    rec.before = interfere
    with pytest.raises(exceptions.GenerationConflict):
        placement.update_from_provider_tree(tree)
    assert [s for m, p, s in rec.log if m == "PUT" and p.endswith("/inventories")] == [409, 409]
    rec.before = None
    placement.update_from_provider_tree(tree)
    assert placement.inventories.get(root).inventories["VCPU"]["total"] == 4


def test_removing_a_provider_that_holds_allocations_needs_a_reshape(placement):
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    gpu = tree.new_child("host1_gpu0", root)
    tree.update_inventory(gpu, {"VGPU": {"total": 2}})
    placement.update_from_provider_tree(tree)
    placement.allocations.put(new_uuid(), {gpu: {"VGPU": 1}}, project_id=new_uuid(),
                              user_id=new_uuid())
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    tree.remove(gpu)
    with pytest.raises(exceptions.ResourceProviderInUse):
        placement.update_from_provider_tree(tree)
    assert placement.providers.find(gpu) is not None


def test_allocations_of_a_tree(placement):
    agg = new_uuid()
    shared = make_sharing_provider(placement, "nfs", agg, {"DISK_GB": {"total": 1000}})
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("host1", root)
    tree.update_inventory(root, {"VCPU": {"total": 8}})
    tree.add_aggregates(root, agg)
    gpu = tree.new_child("host1_gpu0", root)
    tree.update_inventory(gpu, {"VGPU": {"total": 4}})
    placement.update_from_provider_tree(tree)
    other_host = placement.providers.create("host2")
    placement.inventories.set(other_host.uuid, {"VCPU": {"total": 8}}, other_host.generation)

    project, user = new_uuid(), new_uuid()
    vm1, vm2, vm3, vm4 = (new_uuid() for _ in range(4))
    a = placement.allocations
    a.put(vm1, {root: {"VCPU": 2}, shared: {"DISK_GB": 10}}, project_id=project, user_id=user)
    a.put(vm2, {root: {"VCPU": 1}, gpu: {"VGPU": 2}}, project_id=project, user_id=user,
          consumer_type="MIGRATION")
    # Another host's consumer using the same shared storage is not ours...
    a.put(vm3, {other_host.uuid: {"VCPU": 1}, shared: {"DISK_GB": 5}},
          project_id=project, user_id=user)
    # ...and a consumer only on the sharing provider cannot be told apart
    # from one: the documented limitation.
    a.put(vm4, {shared: {"DISK_GB": 1}}, project_id=project, user_id=user)

    allocs = placement.get_allocations_for_provider_tree("host1")
    assert set(allocs) == {vm1, vm2}
    assert allocs[vm1]["allocations"][shared]["resources"] == {"DISK_GB": 10}
    assert allocs[vm1]["allocations"][root]["resources"] == {"VCPU": 2}
    assert allocs[vm2]["allocations"][gpu]["resources"] == {"VGPU": 2}
    for consumer in (vm1, vm2):
        assert allocs[consumer]["project_id"] == project
        assert allocs[consumer]["user_id"] == user
        assert allocs[consumer]["consumer_generation"] == 1
        # Same shape as GET /allocations/{consumer}.
        assert allocs[consumer] == a.get(consumer)
    assert allocs[vm2]["consumer_type"] == "MIGRATION"
    assert placement.get_allocations_for_provider_tree(root) == allocs
