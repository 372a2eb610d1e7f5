"""Storage functions for providers and inventories, used inside one transaction."""

from __future__ import annotations

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from allotment import errors
from allotment.storage import inventories
from allotment.storage import resource_providers as rps
from allotment.storage.clock import utcnow
from allotment.storage.tables import allocations, consumers, projects, users
from tests.harness.sql_answers import usage_of_provider


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _allocate(conn, provider_id: int, class_name: str, used: int) -> None:
    now = utcnow()
    project = conn.execute(sa.insert(projects).values(
        external_id=_uuid(), created_at=now)).inserted_primary_key[0]
    user = conn.execute(sa.insert(users).values(
        external_id=_uuid(), created_at=now)).inserted_primary_key[0]
    consumer = _uuid()
    conn.execute(sa.insert(consumers).values(
        uuid=consumer, project_id=project, user_id=user, created_at=now))
    class_id = inventories.class_ids(conn, [class_name])[class_name]
    conn.execute(sa.insert(allocations).values(
        resource_provider_id=provider_id, consumer_id=consumer,
        resource_class_id=class_id, used=used, created_at=now))


def test_create_tree_and_lookups(db):
    with db.write() as conn:
        root = rps.create(conn, uuid=_uuid(), name="root")
        child = rps.create(conn, uuid=_uuid(), name="child", parent=root)
        assert root.root_provider_uuid == root.uuid and root.parent_provider_uuid is None
        assert child.root_provider_uuid == root.uuid
        assert child.parent_provider_uuid == root.uuid
        assert rps.create(conn, uuid=_uuid(), name="root") is None
        many = rps.get_many_by_uuid(conn, [root.uuid, child.uuid, _uuid(), "x" * 99])
        assert set(many) == {root.uuid, child.uuid}
        assert rps.get_by_uuid(conn, "not-a-uuid") is None
        assert rps.subtree_ids(conn, root) == [root.id, child.id]


def test_bump_generation_detects_lost_race(db):
    with db.write() as conn:
        row = rps.create(conn, uuid=_uuid(), name="p")
        assert rps.bump_generation(conn, row.id, 0) == 1
        with pytest.raises(errors.ConcurrentUpdate) as exc:
            rps.bump_generation(conn, row.id, 0)
        assert exc.value.code == errors.CONCURRENT_UPDATE
        assert rps.get_by_id(conn, row.id).generation == 1


def test_replace_all_rules(db):
    with db.write() as conn:
        row = rps.create(conn, uuid=_uuid(), name="p")
        change = inventories.replace_all(conn, row, {"VCPU": {"total": 8},
                                                     "DISK_GB": {"total": 100}})
        assert change.generation == 1 and change.exceeded == []
        stored = inventories.get_for_provider(conn, row.id)
        assert stored["VCPU"].max_unit == inventories.MAX_INT
        assert stored["VCPU"].allocation_ratio == 1.0

        row = rps.get_by_id(conn, row.id)
        _allocate(conn, row.id, "VCPU", 6)
        with pytest.raises(inventories.InventoryInUse) as exc:
            inventories.replace_all(conn, row, {"DISK_GB": {"total": 100}})
        assert exc.value.code == errors.INVENTORY_INUSE
        assert exc.value.classes == ["VCPU"]
        with pytest.raises(inventories.InventoryOfUnknownClass):
            inventories.replace_all(conn, row, {"CUSTOM_NOPE": {"total": 1}})
        with pytest.raises(inventories.InvalidCapacity):
            inventories.replace_all(conn, row, {"VCPU": {"total": 4, "reserved": 5}})
        with pytest.raises(inventories.InvalidCapacity):
            inventories.replace_all(conn, row, {"VCPU": {"total": 4, "reserved": 4}},
                                    reserved_may_equal_total=False)
        with pytest.raises(inventories.InventoryBelowUsage):
            inventories.replace_all(conn, row, {"VCPU": {"total": 4}},
                                    refuse_over_capacity=True)
        # Shrinking below usage is allowed by default and reported.
        change = inventories.replace_all(conn, row, {"VCPU": {"total": 4}})
        assert change.exceeded == ["VCPU"] and change.generation == 2
        assert usage_of_provider(conn, row.id) == {"VCPU": 6}
        with pytest.raises(errors.ConcurrentUpdate):
            inventories.replace_all(conn, row, {"VCPU": {"total": 8}}, seen_generation=1)


def test_usage_lists_unallocated_inventory_as_zero(db):
    with db.write() as conn:
        row = rps.create(conn, uuid=_uuid(), name="p")
        inventories.replace_all(conn, row, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 64}})
        assert usage_of_provider(conn, row.id) == {"VCPU": 0, "MEMORY_MB": 0}


def test_reparent_moves_subtree_roots(db):
    with db.write() as conn:
        a = rps.create(conn, uuid=_uuid(), name="a")
        b = rps.create(conn, uuid=_uuid(), name="b", parent=a)
        c = rps.create(conn, uuid=_uuid(), name="c", parent=b)
        other = rps.create(conn, uuid=_uuid(), name="other")
        rps.set_parent(conn, rps.get_by_id(conn, b.id), other)
        assert rps.get_by_id(conn, c.id).root_provider_uuid == other.uuid
        assert rps.get_by_id(conn, b.id).parent_provider_uuid == other.uuid
        rps.set_parent(conn, rps.get_by_id(conn, b.id), None)
        assert rps.get_by_id(conn, c.id).root_provider_uuid == b.uuid
        assert not rps.has_children(conn, a.id)
        assert rps.delete(conn, a.id)
        assert rps.get_by_id(conn, a.id) is None
