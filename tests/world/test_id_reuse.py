"""A provider id freed by a deletion and given to a new provider (SQLite
reuses the highest id) must not carry the old provider's usage or
generation into the new one, however many writes a replica catches up on at
once."""

from __future__ import annotations

from allotment.service import allocations as allocation_service
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.service import resource_providers as provider_service
from allotment.service.consumers import ConsumerRequest
from allotment.world.sync import Replica
from tests.harness import sql_answers
from tests.world.test_sync import state

CONSUMER = "00000000-0000-0000-0000-000000000001"


def provider(db, name: str):
    return next(p for p in sql_answers.list_providers_from_database(
        db, provider_service.ProviderFilters()) if p.name == name)


def test_a_reused_id_starts_from_the_database(db):
    from allotment.service import traits as trait_names
    from tests.conftest import clean

    clean(db)
    trait_names.ensure_trait(db, "CUSTOM_GOLD")
    replica = Replica(db)
    replica.catch_up()
    provider_service.create_provider(db, name="old", parent_uuid=None)
    old = provider(db, "old")
    inventory_service.replace_inventories(db, old.uuid, old.generation, {"VCPU": {"total": 8}},
                                         reserved_may_equal_total=True)
    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(uuid=CONSUMER, project_id="p", user_id="u"),
        {old.uuid: {"VCPU": 3}}), attempts=3)
    trait_service.set_traits(db, old.uuid, ["CUSTOM_GOLD"], provider(db, "old").generation)
    replica.catch_up()
    # The replica sees none of what follows until it is all done.
    allocation_service.delete_for_consumer(db, CONSUMER)
    provider_service.delete_provider(db, old.uuid)
    provider_service.create_provider(db, name="new", parent_uuid=None)
    new = provider(db, "new")
    inventory_service.replace_inventories(db, new.uuid, new.generation, {"VCPU": {"total": 8}},
                                         reserved_may_equal_total=True)
    replica.catch_up()
    fresh = Replica(db)
    fresh.rebuild()
    assert state(replica.world) == state(fresh.world)
    record = replica.world.snapshot.get(new.uuid)
    assert record.generation == 1
    assert record.inventories["VCPU"].used == 0
