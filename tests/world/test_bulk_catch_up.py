"""Catching up on more trees and providers than one statement can name.

A process that last looked before a bulk load (tens of thousands of hosts
written through the API) reads every tree and the usage of every new
provider at once; SQLite binds at most 32,766 parameters in a statement and
PostgreSQL 65,535, so those reads go in batches.
"""

from __future__ import annotations

from allotment.service import allocations as allocation_service
from allotment.service import inventories as inventory_service
from allotment.service import resource_providers as provider_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import loader as store
from allotment.world.sync import Replica
from tests.world.test_sync import state


def test_reads_by_id_take_more_ids_than_a_statement_can_bind(db):
    ids = range(1, 70_001)
    with db.read() as conn:
        assert store.usage(conn, ids) == []
        assert store.load(conn, ids) == {}


def test_a_replica_catches_up_on_many_trees_read_in_batches(db, monkeypatch):
    from tests.conftest import clean

    clean(db)
    replica = Replica(db)
    replica.catch_up()
    monkeypatch.setattr(store, "IN_LIST_MAX", 2)
    for h in range(5):
        root = provider_service.create_provider(db, name=f"host{h}", parent_uuid=None)
        child = provider_service.create_provider(db, name=f"numa{h}", parent_uuid=root.uuid)
        for p in (root, child):
            inventory_service.replace_inventories(db, p.uuid, 0,
                                                 {"VCPU": {"total": 8}},
                                                 reserved_may_equal_total=True)
        allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
            ConsumerRequest(uuid=f"00000000-0000-0000-0000-00000000000{h}",
                            project_id="p", user_id="u"),
            {root.uuid: {"VCPU": 1 + h}, child.uuid: {"VCPU": 2}}), attempts=3)
    replica.catch_up()
    fresh = Replica(db)
    fresh.rebuild()
    assert state(replica.world) == state(fresh.world)
    assert len(replica.world.snapshot.index) == 10
    assert sum(u["VCPU"] for u in replica.world.snapshot.used.values()) == 25
