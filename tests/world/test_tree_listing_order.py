"""One tree's providers (``in_tree``, every host's periodic refresh) are
listed in creation order without ranking the whole world again after a
tree changed."""

from __future__ import annotations

import uuid as uuidlib

from allotment.service import provider_traits as trait_service
from allotment.service import resource_providers as provider_service
from allotment.service.resource_providers import ProviderFilters
from allotment.world.sync import Replica


def test_in_tree_in_creation_order_after_a_change(db):
    for n in range(40):
        provider_service.create_provider(db, name=f"other-{n}")
    # UUIDs whose order is not the creation order.
    uuids = sorted((str(uuidlib.uuid4()) for _ in range(5)), reverse=True)
    root = provider_service.create_provider(db, name="root", uuid=uuids[0])
    for n, uuid in enumerate(uuids[1:]):
        provider_service.create_provider(db, name=f"child-{n}", uuid=uuid,
                                         parent_uuid=root.uuid)
    replica = Replica(db)
    everyone = provider_service.list_providers(replica, ProviderFilters())
    assert [p.name for p in everyone][-5:] == ["root", "child-0", "child-1", "child-2",
                                               "child-3"]
    # A change to the tree: the world's rank of every provider is dropped.
    trait_service.set_traits(db, uuids[2], ["HW_CPU_X86_AVX2"], 0)
    listed = provider_service.list_providers(replica, ProviderFilters(in_tree=uuids[3]))
    assert [p.uuid for p in listed] == uuids
    with replica.current() as world:
        assert world._creation_rank is None  # one tree sorted by its own ids
    # A listing of everyone ranks them again, in the same order.
    assert [p.uuid for p in provider_service.list_providers(
        replica, ProviderFilters())][-5:] == uuids
