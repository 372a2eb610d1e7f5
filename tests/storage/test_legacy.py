"""A database an earlier allotment made (its own schema) is converted by db sync."""

from __future__ import annotations

import os_resource_classes
import pytest
import sqlalchemy as sa

from allotment.storage import clock, legacy, migration, tables
from allotment.storage import db as db_mod
from allotment.world.sync import Replica
from tests.harness import backends
from tests.harness.backends import BACKENDS
from tests.storage import legacy_schema as old

pytestmark = pytest.mark.slow


@pytest.fixture(params=BACKENDS)
def legacy_url(request, tmp_path):
    url = backends.create_database(request.param, tmp_path)
    engine = sa.create_engine(db_mod.normalise_url(url))
    old.build(engine)
    now = clock.utcnow()
    with engine.begin() as conn:
        # Classes numbered as they came: a custom one between two standard ones.
        for i, name in enumerate(["DISK_GB", "CUSTOM_GOLD", "VCPU", "CUSTOM_IRON"], 1):
            conn.execute(sa.insert(old.resource_classes).values(id=i, name=name,
                                                                created_at=now))
        rp = old.resource_providers
        conn.execute(sa.insert(rp).values(id=1, uuid="11111111-1111-1111-1111-111111111111",
                                          name="host", generation=5, created_at=now))
        conn.execute(sa.update(rp).values(root_provider_id=1))
        conn.execute(sa.insert(rp).values(id=2, uuid="22222222-2222-2222-2222-222222222222",
                                          name="numa", generation=1, root_provider_id=1,
                                          parent_provider_id=1, created_at=now))
        for pid, cid in ((1, 1), (1, 2), (2, 3)):
            conn.execute(sa.insert(old.inventories).values(
                resource_provider_id=pid, resource_class_id=cid, total=100, reserved=0,
                min_unit=1, max_unit=100, step_size=1, allocation_ratio=1.0,
                created_at=now))
        conn.execute(sa.insert(old.projects).values(id=1, external_id="p", created_at=now))
        conn.execute(sa.insert(old.users).values(id=1, external_id="u", created_at=now))
        conn.execute(sa.insert(old.consumers).values(
            id=7, uuid="77777777-7777-7777-7777-777777777777", project_id=1, user_id=1,
            generation=3, created_at=now))
        for pid, cid, used in ((1, 1, 10), (1, 2, 2), (2, 3, 4)):
            conn.execute(sa.insert(old.allocations).values(
                consumer_id=7, resource_provider_id=pid, resource_class_id=cid, used=used,
                created_at=now))
    engine.dispose()
    yield url
    backends.drop_database(request.param, url)


def test_class_ids_follow_upstream_s_numbering():
    standards = os_resource_classes.STANDARDS
    assert legacy.class_ids([(1, "DISK_GB"), (2, "CUSTOM_A"), (3, "VCPU"), (4, "CUSTOM_B")]) \
        == {1: standards.index("DISK_GB"), 2: 10000, 3: standards.index("VCPU"), 4: 10001}


def test_db_sync_converts_an_earlier_allotment_s_database(legacy_url):
    db = db_mod.Database(db_mod.create_engine(legacy_url))
    migration.upgrade(db.engine)
    assert migration.current_revision(db.engine) == migration.head_revision(db.engine)
    assert migration.state(db.engine).upstream == migration.UPSTREAM_HEAD
    standards = os_resource_classes.STANDARDS
    with db.read() as conn:
        classes = dict(conn.execute(sa.select(tables.resource_classes.c.name,
                                              tables.resource_classes.c.id)).all())
        assert classes == {"DISK_GB": standards.index("DISK_GB"), "CUSTOM_GOLD": 10000,
                           "VCPU": standards.index("VCPU"), "CUSTOM_IRON": 10001}
        held = sorted(conn.execute(sa.select(
            tables.allocations.c.consumer_id, tables.allocations.c.resource_provider_id,
            tables.resource_classes.c.name, tables.allocations.c.used).join_from(
            tables.allocations, tables.resource_classes,
            tables.allocations.c.resource_class_id == tables.resource_classes.c.id)).all())
        consumer = "77777777-7777-7777-7777-777777777777"
        assert held == [(consumer, 1, "CUSTOM_GOLD", 2), (consumer, 1, "DISK_GB", 10),
                        (consumer, 2, "VCPU", 4)]
        inventory = sorted(conn.execute(sa.select(
            tables.inventories.c.resource_provider_id, tables.resource_classes.c.name)
            .join_from(tables.inventories, tables.resource_classes,
                       tables.inventories.c.resource_class_id == tables.resource_classes.c.id)
        ).all())
        assert inventory == [(1, "CUSTOM_GOLD"), (1, "DISK_GB"), (2, "VCPU")]
        names = set(sa.inspect(conn).get_table_names())
        assert not {n for n in names if n.startswith("legacy_")}
    # New rows get ids past the copied ones (sequences moved on, PostgreSQL).
    with db.write() as conn:
        conn.execute(sa.insert(tables.resource_providers).values(
            uuid="33333333-3333-3333-3333-333333333333", name="other", generation=0,
            created_at=clock.utcnow()))
    world = Replica(db)
    with world.current() as current:
        assert current.snapshot.used["22222222-2222-2222-2222-222222222222"]["VCPU"] == 4
    # And it can go to upstream Placement from here.
    migration.hand_back(db.engine)
    assert migration.state(db.engine).own is None
    db.dispose()
