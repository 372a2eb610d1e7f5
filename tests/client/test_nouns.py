"""Every endpoint group through the client, over HTTP and in-process alike."""

from __future__ import annotations

import uuid

import pytest

from allotment.client import exceptions


def new_uuid() -> str:
    return str(uuid.uuid4())


def test_versions_and_negotiation(placement):
    versions = placement.versions()
    assert versions == {"min_version": "1.0", "max_version": "1.39"}
    assert placement.negotiate() == "1.39"


def test_unavailable_microversion_is_typed(connect):
    client = connect(microversion="1.99")
    with pytest.raises(exceptions.MicroversionNotAvailable) as info:
        client.resource_classes.list()
    assert info.value.status == 406


def test_unauthenticated_requests_are_typed(transport_kind, request, db):
    if transport_kind == "http":
        from allotment.client import PlacementClient

        client = PlacementClient.from_url(request.getfixturevalue("live_server"))
    else:
        from allotment.client import DirectTransport, PlacementClient

        app = request.getfixturevalue("direct_context").transport.app
        client = PlacementClient(DirectTransport(app, token=None))
    with pytest.raises(exceptions.Unauthorized):
        client.traits.list()


def test_resource_classes(placement):
    rc = placement.resource_classes
    assert "VCPU" in rc.list()
    rc.create("CUSTOM_MAGIC")
    with pytest.raises(exceptions.DuplicateName) as info:
        rc.create("CUSTOM_MAGIC")
    # Placement gives this conflict no code; the detail identifies it.
    assert info.value.code == "placement.undefined_code"
    rc.ensure("CUSTOM_MAGIC")
    rc.ensure("CUSTOM_MAGIC", version="1.2")
    assert rc.exists("CUSTOM_MAGIC")
    rc.delete("CUSTOM_MAGIC")
    assert not rc.exists("CUSTOM_MAGIC")
    with pytest.raises(exceptions.NotFound):
        rc.delete("CUSTOM_MAGIC")
    with pytest.raises(exceptions.BadRequest):
        rc.create("lowercase")


def test_traits(placement):
    traits = placement.traits
    traits.ensure("CUSTOM_FAST")
    traits.ensure_all(["CUSTOM_FAST", "CUSTOM_SHINY", "HW_CPU_X86_AVX2"])
    assert traits.exists("CUSTOM_SHINY")
    assert traits.list(name="startswith:CUSTOM_") == ["CUSTOM_FAST", "CUSTOM_SHINY"]
    assert "HW_CPU_X86_AVX2" in traits.list(name="in:HW_CPU_X86_AVX2,CUSTOM_NOPE")
    traits.delete("CUSTOM_SHINY")
    assert not traits.exists("CUSTOM_SHINY")
    with pytest.raises(exceptions.BadRequest):
        traits.delete("HW_CPU_X86_AVX2")  # standard traits cannot be deleted


def test_providers_and_trees(placement):
    prov = placement.providers
    root = prov.create("host1")
    assert root.generation == 0 and root.root_provider_uuid == root.uuid
    child = prov.create("host1_numa0", parent_provider_uuid=root.uuid)
    grandchild = prov.create("host1_numa0_gpu0", uuid=new_uuid(),
                             parent_provider_uuid=child.uuid)
    assert grandchild.root_provider_uuid == root.uuid
    other = prov.create("host2")
    assert [p.uuid for p in prov.in_tree(grandchild.uuid)] == \
        [root.uuid, child.uuid, grandchild.uuid]
    assert [p.uuid for p in prov.list(name="host2")] == [other.uuid]
    assert prov.get(child.uuid) == child
    renamed = prov.update(other.uuid, name="host2-renamed")
    assert renamed.name == "host2-renamed"
    # Re-parenting (1.37): the spare host becomes a child of host1.
    moved = prov.update(other.uuid, name="host2-renamed", parent_provider_uuid=root.uuid)
    assert moved.root_provider_uuid == root.uuid

    with pytest.raises(exceptions.DuplicateName) as info:
        prov.create("host1")
    assert info.value.code == "placement.duplicate_name"
    with pytest.raises(exceptions.CannotDeleteParent) as info:
        prov.delete(child.uuid)
    assert info.value.code == "placement.resource_provider.cannot_delete_parent"
    prov.delete(grandchild.uuid)
    with pytest.raises(exceptions.NotFound):
        prov.get(grandchild.uuid)
    assert prov.find(grandchild.uuid) is None
    with pytest.raises(exceptions.BadRequest):
        prov.create("orphan", parent_provider_uuid=new_uuid())


def test_provider_filters(placement):
    prov, inv = placement.providers, placement.inventories
    a, b = prov.create("a"), prov.create("b")
    inv.set(a.uuid, {"VCPU": {"total": 8}}, a.generation)
    inv.set(b.uuid, {"VCPU": {"total": 2}}, b.generation)
    agg = new_uuid()
    placement.aggregates.set(b.uuid, [agg], prov.get(b.uuid).generation)
    placement.provider_traits.set(a.uuid, ["HW_CPU_X86_AVX2"], prov.get(a.uuid).generation)
    assert [p.name for p in prov.list(resources={"VCPU": 4})] == ["a"]
    assert [p.name for p in prov.list(member_of=[agg])] == ["b"]
    assert [p.name for p in prov.list(required=["HW_CPU_X86_AVX2"])] == ["a"]
    assert [p.name for p in prov.list(required=["!HW_CPU_X86_AVX2"])] == ["b"]
    with pytest.raises(exceptions.BadRequest):
        prov.list(member_of="not-a-uuid")


def test_inventories_and_generations(placement):
    rp = placement.providers.create("host")
    inv = placement.inventories
    got = inv.set(rp.uuid, {"VCPU": {"total": 8, "allocation_ratio": 4.0},
                            "MEMORY_MB": {"total": 4096, "reserved": 512}}, rp.generation)
    assert got.resource_provider_generation == rp.generation + 1
    assert got.inventories["VCPU"]["allocation_ratio"] == 4.0
    assert inv.get(rp.uuid).inventories == got.inventories
    with pytest.raises(exceptions.GenerationConflict) as info:
        inv.set(rp.uuid, {"VCPU": {"total": 1}}, rp.generation)
    assert info.value.code == "placement.concurrent_update"
    one = inv.set_one(rp.uuid, "VCPU", {"total": 16}, got.resource_provider_generation)
    assert one["total"] == 16
    assert inv.get_one(rp.uuid, "VCPU")["total"] == 16
    created = inv.create_one(rp.uuid, "DISK_GB", {"total": 100},
                             one["resource_provider_generation"])
    assert created["total"] == 100
    inv.delete_one(rp.uuid, "DISK_GB")
    with pytest.raises(exceptions.NotFound):
        inv.get_one(rp.uuid, "DISK_GB")
    with pytest.raises(exceptions.BadRequest):
        inv.set(rp.uuid, {"VCPU": {"total": 0}}, inv.get(rp.uuid).resource_provider_generation)
    inv.delete_all(rp.uuid)
    assert inv.get(rp.uuid).inventories == {}
    inv.set(rp.uuid, {"VCPU": {"total": 1}}, inv.get(rp.uuid).resource_provider_generation)
    inv.delete_all(rp.uuid, version="1.4")  # a PUT of nothing before 1.5
    assert inv.get(rp.uuid).inventories == {}
    with pytest.raises(exceptions.NotFound):
        inv.get(new_uuid())


def test_provider_traits_and_aggregates(placement):
    rp = placement.providers.create("host")
    placement.traits.ensure("CUSTOM_GOLD")
    t = placement.provider_traits.set(rp.uuid, ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"],
                                      rp.generation)
    assert t.traits == {"CUSTOM_GOLD", "HW_CPU_X86_AVX2"}
    assert placement.provider_traits.get(rp.uuid).traits == t.traits
    with pytest.raises(exceptions.GenerationConflict):
        placement.provider_traits.set(rp.uuid, [], rp.generation)
    with pytest.raises(exceptions.BadRequest):
        placement.provider_traits.set(rp.uuid, ["CUSTOM_UNKNOWN"],
                                      t.resource_provider_generation)
    placement.provider_traits.delete(rp.uuid)
    assert placement.provider_traits.get(rp.uuid).traits == set()

    gen = placement.providers.get(rp.uuid).generation
    aggs = {new_uuid(), new_uuid()}
    a = placement.aggregates.set(rp.uuid, aggs, gen)
    assert a.aggregates == aggs and a.resource_provider_generation == gen + 1
    with pytest.raises(exceptions.GenerationConflict):
        placement.aggregates.set(rp.uuid, [], gen)
    assert placement.aggregates.get(rp.uuid).aggregates == aggs
    old = placement.aggregates.get(rp.uuid, version="1.18")
    assert old.resource_provider_generation is None and old.aggregates == aggs


def test_allocations_and_usages(placement):
    rp = placement.providers.create("host")
    placement.inventories.set(rp.uuid, {"VCPU": {"total": 4}, "MEMORY_MB": {"total": 1024}},
                              rp.generation)
    project, user = new_uuid(), new_uuid()
    c1, c2 = new_uuid(), new_uuid()
    allocs = placement.allocations
    allocs.put(c1, {rp.uuid: {"resources": {"VCPU": 2, "MEMORY_MB": 256}}},
               project_id=project, user_id=user, consumer_generation=None)
    record = allocs.get(c1)
    assert record["allocations"][rp.uuid]["resources"] == {"VCPU": 2, "MEMORY_MB": 256}
    assert record["project_id"] == project and record["user_id"] == user
    assert record["consumer_generation"] == 1
    assert record["consumer_type"] == "INSTANCE"
    with pytest.raises(exceptions.GenerationConflict):
        allocs.put(c1, {rp.uuid: {"VCPU": 1}}, project_id=project, user_id=user,
                   consumer_generation=None)
    with pytest.raises(exceptions.Conflict):  # more than capacity
        allocs.put(c2, {rp.uuid: {"VCPU": 3}}, project_id=project, user_id=user)
    allocs.post({c2: {"allocations": {rp.uuid: {"resources": {"VCPU": 1}}},
                      "project_id": project, "user_id": user, "consumer_generation": None,
                      "consumer_type": "MIGRATION"}})
    on_rp = allocs.for_provider(rp.uuid)
    assert set(on_rp["allocations"]) == {c1, c2}
    usages = placement.usages.for_provider(rp.uuid)
    assert usages.usages == {"VCPU": 3, "MEMORY_MB": 256}
    assert placement.usages.totals(project) == {
        "INSTANCE": {"consumer_count": 1, "VCPU": 2, "MEMORY_MB": 256},
        "MIGRATION": {"consumer_count": 1, "VCPU": 1}}
    assert placement.usages.totals(project, version="1.9") == {"VCPU": 3, "MEMORY_MB": 256}
    with pytest.raises(exceptions.InventoryInUse) as info:
        placement.inventories.set(rp.uuid, {"MEMORY_MB": {"total": 1024}},
                                  usages.resource_provider_generation)
    assert info.value.code == "placement.inventory.inuse"
    # Placement sends the concurrent-update code here; it is still "in use".
    with pytest.raises(exceptions.InventoryInUse) as info:
        placement.inventories.delete_one(rp.uuid, "VCPU")
    assert info.value.code == "placement.concurrent_update"
    with pytest.raises(exceptions.ResourceProviderInUse):
        placement.providers.delete(rp.uuid)
    allocs.delete(c1)
    assert allocs.get(c1) == {"allocations": {}}
    with pytest.raises(exceptions.NotFound):
        allocs.delete(c1)
