"""A new consumer's claim tail (storage/new_claims.py): the consumer, its
allocations and the providers' generations, in one statement on
PostgreSQL and three elsewhere, with the same outcome."""

from __future__ import annotations

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from allotment.service import allocations as allocation_service
from allotment.service import inventories as inventory_service
from allotment.service import resource_providers as provider_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import consumers as consumer_store
from allotment.storage import feed, new_claims, resource_classes
from allotment.storage import resource_providers as provider_store
from allotment.storage.tables import allocations, consumers


def _uuid() -> str:
    return str(uuidlib.uuid4())


def _hosts(db, count: int) -> list:
    rows = []
    for i in range(count):
        rp = provider_service.create_provider(db, name=f"h{i}-{_uuid()}", uuid=_uuid())
        rp, _ = inventory_service.replace_inventories(
            db, rp.uuid, rp.generation, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 512}},
            reserved_may_equal_total=False)
        rows.append(rp)
    return rows


def _consumer(conn, uuid: str) -> new_claims.NewConsumer:
    project, user, kind = consumer_store.ensure_owner(conn, "project", "user", "INSTANCE")
    return new_claims.NewConsumer(uuid, project, user, kind, 1)


def _held(db, uuid: str) -> list:
    with db.read() as conn:
        return [tuple(r) for r in conn.execute(
            sa.select(allocations.c.resource_provider_id, allocations.c.resource_class_id,
                      allocations.c.used)
            .where(allocations.c.consumer_id == uuid).order_by(allocations.c.id))]


def _generations(db, hosts: list) -> list[int]:
    with db.read() as conn:
        return [provider_store.get_by_uuid(conn, rp.uuid).generation for rp in hosts]


def test_writes_the_consumer_its_allocations_and_the_generations(db):
    hosts = _hosts(db, 2)
    uuid = _uuid()
    with db.write() as conn:
        ids = resource_classes.ids_for(conn, ["VCPU", "MEMORY_MB"])
        amounts = {(hosts[0].id, ids["VCPU"]): 2, (hosts[0].id, ids["MEMORY_MB"]): 64,
                   (hosts[1].id, ids["VCPU"]): 1}
        seen = {rp.id: rp.generation for rp in hosts}
        assert new_claims.write(conn, _consumer(conn, uuid), amounts, seen)
        notes = conn.info[feed._NOTES]
        assert {pid: g for pid, (g, _) in notes.generations.items()} == {
            rp.id: rp.generation + 1 for rp in hosts}
    assert _generations(db, hosts) == [rp.generation + 1 for rp in hosts]
    assert sorted(_held(db, uuid)) == sorted(
        (pid, cid, used) for (pid, cid), used in amounts.items())
    with db.read() as conn:
        row = consumer_store.get_many_by_uuid(conn, [uuid])[uuid]
    assert row.generation == 1


def test_a_provider_that_moved_meanwhile_moves_none_and_writes_nothing(db):
    hosts = _hosts(db, 3)
    uuid = _uuid()

    class LostRace(Exception):
        pass

    with pytest.raises(LostRace), db.write() as conn:
        vcpu = resource_classes.ids_for(conn, ["VCPU"])["VCPU"]
        seen = {rp.id: rp.generation for rp in hosts}
        seen[hosts[1].id] += 7  # another write moved it on
        if not new_claims.write(conn, _consumer(conn, uuid),
                                {(rp.id, vcpu): 1 for rp in hosts}, seen):
            raise LostRace
    assert _generations(db, hosts) == [rp.generation for rp in hosts]
    assert _held(db, uuid) == []
    with db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(consumers)
                            .where(consumers.c.uuid == uuid)).scalar() == 0


def test_an_existing_uuid_raises_the_integrity_error_a_retry_starts_from(db):
    hosts = _hosts(db, 1)
    uuid = _uuid()
    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(uuid, "project", "user"), {hosts[0].uuid: {"VCPU": 1}}), attempts=1)
    with pytest.raises(sa.exc.IntegrityError), db.write() as conn:
        vcpu = resource_classes.ids_for(conn, ["VCPU"])["VCPU"]
        now = provider_store.get_by_uuid(conn, hosts[0].uuid)
        new_claims.write(conn, _consumer(conn, uuid), {(now.id, vcpu): 1},
                         {now.id: now.generation})
    assert _held(db, uuid) == [(hosts[0].id, _vcpu(db), 1)]


def _vcpu(db) -> int:
    with db.read() as conn:
        return resource_classes.ids_for(conn, ["VCPU"])["VCPU"]


def test_a_claim_of_a_new_consumer_through_the_service_is_the_same_write(db):
    """The service's claim goes this way: the consumer is created at
    generation 1 holding what was asked, and every provider moved once."""
    hosts = _hosts(db, 2)
    uuid = _uuid()
    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(uuid, "project", "user", consumer_type="INSTANCE"),
        {hosts[0].uuid: {"VCPU": 2}, hosts[1].uuid: {"MEMORY_MB": 128}}), attempts=1)
    assert _generations(db, hosts) == [rp.generation + 1 for rp in hosts]
    rows = allocation_service.get_for_consumer(db, uuid)
    assert sorted((r.provider_uuid, r.resource_class, r.used, r.consumer_generation,
                   r.consumer_type) for r in rows) == sorted([
        (hosts[0].uuid, "VCPU", 2, 1, "INSTANCE"), (hosts[1].uuid, "MEMORY_MB", 128, 1,
                                                    "INSTANCE")])


def _grow(conn, hosts: int, consumers_per_host: int) -> None:
    """PostgreSQL: a database grown by use, with its planner statistics
    (what a cloud's is; a test's few rows plan differently)."""
    conn.execute(sa.text(
        "INSERT INTO resource_providers (uuid, name, generation, created_at) "
        "SELECT md5('rp' || i), 'grown-' || i, 1, now() FROM generate_series(1, :n) i"),
        {"n": hosts})
    conn.execute(sa.text("UPDATE resource_providers SET root_provider_id = id "
                         "WHERE root_provider_id IS NULL"))
    project, user, kind = consumer_store.ensure_owner(conn, "grown", "grown", "INSTANCE")
    conn.execute(sa.text(
        "INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, "
        "created_at) SELECT md5('c' || i), :p, :u, :k, 1, now() "
        "FROM generate_series(1, :n) i"),
        {"p": project, "u": user, "k": kind, "n": hosts * consumers_per_host})
    conn.execute(sa.text(
        "INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used, "
        "created_at) SELECT c.uuid, rp.id, rc.id, 1, now() FROM consumers c "
        "JOIN resource_providers rp ON rp.name = 'grown-' || (1 + c.id % :n) "
        "CROSS JOIN resource_classes rc WHERE rc.name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')"),
        {"n": hosts})
    for table in ("resource_providers", "consumers", "allocations"):
        conn.execute(sa.text(f"ANALYZE {table}"))


class _RolledBack(Exception):
    pass


def _tail_plans(conn) -> dict[str, tuple[int, int]]:
    """The claim tails prepared on this connection: their generic and
    custom plans so far."""
    return {name: (generic, custom) for name, generic, custom in conn.execute(sa.text(
        "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE 'WITH new_consumer%'"))}


def test_a_claim_tail_settles_on_one_plan_on_a_grown_database(db, backend):
    """PostgreSQL plans a prepared statement once it has seen that a plan made
    for no particular values costs no more than those made for each; with
    array parameters it never does, and plans every claim anew (about
    130 us of the server's CPU).  A claim on one host binds each value."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL's plan cache")
    hosts = _hosts(db, 1)
    with db.write() as conn:
        _grow(conn, 1000, 10)
    # One transaction on one connection, rolled back at the end (psycopg
    # forgets its prepared statements at every rollback, a savepoint's too).
    with pytest.raises(_RolledBack), db.write() as conn:
        ids = resource_classes.ids_for(conn, ["VCPU", "MEMORY_MB"])
        rp = provider_store.get_by_uuid(conn, hosts[0].uuid)
        # The pooled connection may hold the statement from other tests:
        # only what this test runs counts.
        before = _tail_plans(conn)
        for k in range(20):
            assert new_claims.write(
                conn, _consumer(conn, _uuid()),
                {(rp.id, ids["VCPU"]): 1, (rp.id, ids["MEMORY_MB"]): 64},
                {rp.id: rp.generation + k})
        after = _tail_plans(conn)
        raise _RolledBack
    ran = {name: (generic - before.get(name, (0, 0))[0], custom - before.get(name, (0, 0))[1])
           for name, (generic, custom) in after.items()}
    generic, custom = max(ran.values(), key=sum)
    assert generic >= 5
    assert custom <= 5


def test_a_claim_on_more_providers_than_are_bound_one_by_one(db):
    """Past ``PROVIDERS_LISTED_UP_TO`` providers the tail takes arrays on
    PostgreSQL: the same write."""
    hosts = _hosts(db, new_claims.PROVIDERS_LISTED_UP_TO + 1)
    uuid = _uuid()
    with db.write() as conn:
        ids = resource_classes.ids_for(conn, ["VCPU", "MEMORY_MB"])
        amounts = {(rp.id, ids["VCPU"]): 1 + i % 3 for i, rp in enumerate(hosts)}
        amounts[(hosts[0].id, ids["MEMORY_MB"])] = 32
        assert new_claims.write(conn, _consumer(conn, uuid), amounts,
                                {rp.id: rp.generation for rp in hosts})
    assert _generations(db, hosts) == [rp.generation + 1 for rp in hosts]
    assert sorted(_held(db, uuid)) == sorted(
        (pid, cid, used) for (pid, cid), used in amounts.items())
