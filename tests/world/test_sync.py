"""Every process's world, kept current from the change feed, equals a fresh load.

Random sequences of writes go through the service layer -- some alone, some
several at once from different "processes" (each with its own Database,
engine and connection pool, as separate API processes have) -- while
several replicas of the world catch up at random moments.  After each step
the first replica must equal a world loaded from scratch (it saw every
committed change), and at the end so must every replica; the candidates
for a set of requests must be the same either way.
"""

from __future__ import annotations

import contextlib
import datetime
import random
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allotment import errors
from allotment.engine import AllocationCandidatesRequest, SearchGroup, find_candidates
from allotment.service import aggregates as aggregate_service
from allotment.service import allocations as allocation_service
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.service import resource_classes as class_service
from allotment.service import resource_providers as provider_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import clock
from allotment.world.sync import Replica
from tests.harness import sql_answers
from tests.world.conftest import rename_holding_its_feed_id

pytestmark = pytest.mark.slow

AGGS = [f"11111111-1111-1111-1111-{i:012d}" for i in range(3)]
TRAITS = ["HW_CPU_X86_AVX2", "CUSTOM_GOLD", "MISC_SHARES_VIA_AGGREGATE"]
CLASSES = ["VCPU", "DISK_GB", "CUSTOM_MAGIC"]
REQUESTS = [
    AllocationCandidatesRequest(groups=(SearchGroup(resources={"VCPU": 1}),)),
    AllocationCandidatesRequest(groups=(SearchGroup(resources={"VCPU": 1, "DISK_GB": 2}),)),
    AllocationCandidatesRequest(groups=(
        SearchGroup(resources={"DISK_GB": 1}),
        SearchGroup(suffix="_X", resources={"VCPU": 1},
                     required_traits=(frozenset({"HW_CPU_X86_AVX2"}),))),
        group_policy="none"),
    AllocationCandidatesRequest(groups=(
        SearchGroup(resources={"CUSTOM_MAGIC": 1}, member_of=(frozenset(AGGS[:2]),)),)),
]


def state(world) -> dict:
    """Everything a world says, in comparable form."""
    snap = world.snapshot
    providers = {}
    for uuid in snap.index:
        rec = snap.get(uuid)
        providers[uuid] = (
            rec.name, rec.generation, rec.parent_uuid, rec.root_uuid,
            {rc: (inv.capacity, inv.used, inv.min_unit, inv.max_unit, inv.step_size)
             for rc, inv in rec.inventories.items()},
            sorted(rec.traits), sorted(rec.aggregates), world.stamps[uuid])
    usage = {u: dict(per_rc) for u, per_rc in snap.used.items() if u in snap.index}
    return {"providers": providers, "usage": usage,
            "classes": dict(world.names.class_by_id),
            "traits": dict(world.names.trait_rank),
            "ids": dict(world.uuid_of_id)}


def candidates(world) -> list:
    return [list(find_candidates(world.snapshot, r)) for r in REQUESTS]


class Cloud:
    """Drives random writes through the services of several processes."""

    def __init__(self, dbs, rnd: random.Random) -> None:
        self.dbs = dbs
        self.rnd = rnd
        self.names = 0
        self.consumers: list[str] = []

    def prepare(self) -> None:
        """The custom names the random writes use."""
        from allotment.service import traits as trait_names

        class_service.ensure_class(self.dbs[0], "CUSTOM_MAGIC")
        trait_names.ensure_trait(self.dbs[0], "CUSTOM_GOLD")

    def providers(self, db) -> list:
        return sql_answers.list_providers_from_database(
            db, provider_service.ProviderFilters())

    def op(self, db, kind: str) -> None:
        rnd = self.rnd
        rows = self.providers(db)
        if kind == "create" or not rows:
            self.names += 1
            parent = rnd.choice(rows).uuid if rows and rnd.random() < 0.5 else None
            provider_service.create_provider(
                db, name=f"rp{self.names}-{rnd.random()}", parent_uuid=parent)
            return
        row = rnd.choice(rows)
        if kind == "inventory":
            records = {rc: {"total": rnd.randint(1, 8), "max_unit": 8}
                       for rc in rnd.sample(CLASSES, rnd.randint(0, 3))}
            inventory_service.replace_inventories(
                db, row.uuid, row.generation, records, reserved_may_equal_total=True)
        elif kind == "traits":
            trait_service.set_traits(db, row.uuid, rnd.sample(TRAITS, rnd.randint(0, 2)),
                                     row.generation)
        elif kind == "aggregates":
            aggregate_service.set_aggregates(
                db, row.uuid, rnd.sample(AGGS, rnd.randint(0, 2)),
                generation=row.generation if rnd.random() < 0.5 else None)
        elif kind == "move":
            others = [r for r in rows if r.root_provider_uuid != row.root_provider_uuid]
            target = rnd.choice(others).uuid if others and rnd.random() < 0.7 else None
            provider_service.update_provider(db, row.uuid, name=row.name,
                                             parent_uuid=target, allow_reparenting=True)
        elif kind == "rename":
            self.names += 1
            provider_service.update_provider(db, row.uuid, name=f"renamed{self.names}")
        elif kind == "delete":
            provider_service.delete_provider(db, row.uuid)
        elif kind == "allocate":
            consumer = f"00000000-0000-0000-0000-{rnd.randint(1, 6):012d}"
            picks = rnd.sample(rows, min(len(rows), rnd.randint(1, 2)))
            wanted = {p.uuid: {rnd.choice(CLASSES): rnd.randint(1, 2)} for p in picks}
            allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
                ConsumerRequest(uuid=consumer, project_id="p", user_id="u"), wanted),
                attempts=10)
        elif kind == "deallocate":
            consumer = f"00000000-0000-0000-0000-{rnd.randint(1, 6):012d}"
            allocation_service.delete_for_consumer(db, consumer)
        elif kind == "class":
            self.names += 1
            class_service.create_class(db, f"CUSTOM_C{self.names}")

    def attempt(self, db, kind: str) -> None:
        # Refused writes (conflicts, in-use, capacity...) change nothing.
        with contextlib.suppress(errors.PlacementError):
            self.op(db, kind)


KINDS = ["create", "create", "inventory", "inventory", "traits", "traits", "aggregates",
         "aggregates", "move", "rename", "delete", "allocate", "allocate", "allocate",
         "deallocate", "class"]


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(5, 25))
def test_replicas_equal_a_fresh_load_after_random_writes(db, processes, seed, steps):
    from tests.conftest import clean

    clean(db)
    rnd = random.Random(seed)
    writers = [db, *processes]
    replicas = [Replica(d) for d in writers]
    for r in replicas:
        r.catch_up()
    cloud = Cloud(writers, rnd)
    cloud.prepare()
    for _ in range(steps):
        if rnd.random() < 0.4:
            # Several writers at once, from different processes.
            jobs = [(w, rnd.choice(KINDS)) for w in rnd.sample(writers, rnd.randint(2, 4))]
            threads = [threading.Thread(target=cloud.attempt, args=job) for job in jobs]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        else:
            cloud.attempt(rnd.choice(writers), rnd.choice(KINDS))
        for r in replicas[1:]:
            if rnd.random() < 0.5:
                r.catch_up()
        # Everything committed so far is visible to the next request.
        replicas[0].catch_up()
        fresh = Replica(db)
        fresh.rebuild()
        assert state(replicas[0].world) == state(fresh.world)
    fresh = Replica(db)
    fresh.rebuild()
    want = state(fresh.world)
    for r in replicas:
        r.catch_up()
        assert state(r.world) == want
        assert candidates(r.world) == candidates(fresh.world)
    # The incremental path was taken, not a reload each time.
    assert replicas[0].rebuilds == 1


def test_a_reader_catches_up_with_what_it_has_not_seen(db):
    replica = Replica(db)
    replica.catch_up()
    rp = provider_service.create_provider(db, name="late")
    inventory_service.replace_inventories(db, rp.uuid, 0, {"VCPU": {"total": 4}},
                                          reserved_may_equal_total=False)
    allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
        ConsumerRequest(uuid="00000000-0000-0000-0000-000000000001", project_id="p",
                        user_id="u"), {rp.uuid: {"VCPU": 3}}), attempts=3)
    with replica.current() as world:
        assert world.snapshot.resources_of(rp.uuid) == {"VCPU": (4, 3)}
        assert world.snapshot.get(rp.uuid).generation == 2
    assert replica.rebuilds == 1


def test_a_generation_note_of_a_deleted_provider_spares_its_id_successor(db):
    """SQLite hands the highest id out again after a delete: a reader that
    catches up on bump, delete and create at once must not give the new
    provider the old one's generation."""
    replica = Replica(db)
    replica.catch_up()
    old = provider_service.create_provider(db, name="old")
    trait_service.set_traits(db, old.uuid, ["HW_CPU_X86_AVX2"], 0)
    trait_service.set_traits(db, old.uuid, ["HW_CPU_X86_SSE"], 1)
    provider_service.delete_provider(db, old.uuid)
    new = provider_service.create_provider(db, name="new")
    if db.backend == "sqlite":
        assert new.id == old.id  # the case this is about
    with replica.current() as world:
        assert old.uuid not in world.snapshot.index
        assert world.snapshot.get(new.uuid).generation == 0
    assert replica.rebuilds == 1


def test_a_pruned_feed_makes_a_lagging_reader_reload(db):
    from allotment.storage import feed

    replica = Replica(db)
    replica.catch_up()
    rp = provider_service.create_provider(db, name="first")
    provider_service.create_provider(db, name="second")
    with db.write() as conn:
        head = feed.head(conn)
        # Rows are stamped in whole seconds: every one so far is older than
        # the next second.
        feed.prune(conn, clock.utcnow() + datetime.timedelta(seconds=1), below=head)
    provider_service.create_provider(db, name="third")
    with replica.current() as world:
        assert rp.uuid in world.snapshot.index
        assert len(world.snapshot) == 3
    assert replica.rebuilds == 2


def test_a_tree_named_only_by_a_row_committed_between_the_reads_is_read_too(
        db, processes, monkeypatch):
    """The feed is read once to see what changed, then again in the snapshot
    the trees are read in, together with the trees the first read named: a
    tree named only by a row that came in between is read in that snapshot."""
    from allotment.storage import catch_up

    replica = Replica(db)
    first = provider_service.create_provider(db, name="first")
    second = provider_service.create_provider(db, name="second")
    replica.catch_up()
    inventory_service.replace_inventories(db, first.uuid, 0, {"VCPU": {"total": 4}},
                                          reserved_may_equal_total=False)
    real = catch_up.read
    asked: list[set[int]] = []

    def a_write_comes_first(conn, after, also, root_ids):
        asked.append(set(root_ids))
        inventory_service.replace_inventories(processes[0], second.uuid, 0,
                                              {"VCPU": {"total": 2}},
                                              reserved_may_equal_total=False)
        return real(conn, after, also, root_ids)

    monkeypatch.setattr(catch_up, "read", a_write_comes_first)
    with replica.current() as world:
        assert world.snapshot.resources_of(first.uuid) == {"VCPU": (4, 0)}
        assert world.snapshot.resources_of(second.uuid) == {"VCPU": (2, 0)}
        assert world.snapshot.get(second.uuid).generation == 1
    assert asked == [{first.id}]
    fresh = Replica(db)
    fresh.rebuild()
    assert state(replica.world) == state(fresh.world)
    assert replica.rebuilds == 1


def test_a_change_committing_after_a_later_one_is_not_lost(db, processes, monkeypatch):
    """Out-of-order commits: row 12 visible before row 11 commits."""
    from allotment.storage import cursor

    if db.backend != "postgresql":
        pytest.skip("rows commit in id order here (see the MySQL test below)")
    replica = Replica(db)
    replica.catch_up()
    early = provider_service.create_provider(db, name="early")
    replica.catch_up()
    slow, fast = processes[0], processes[1]

    # The slow writer takes its feed id first and commits last.
    conn, tx, _taken = rename_holding_its_feed_id(slow, early.uuid, "renamed-late")
    provider_service.create_provider(fast, name="quick")
    with replica.current() as world:
        assert len(world.snapshot) == 2
        assert world.snapshot.get(early.uuid).name == "early"
    assert replica.gaps, "the slow writer's id is remembered"
    # Still open: the gap must not be given up, however long it waits.
    monkeypatch.setattr(cursor, "GAP_PATIENCE", 0.0)
    replica.catch_up()
    assert replica.gaps
    tx.commit()
    conn.close()
    with replica.current() as world:
        assert world.snapshot.get(early.uuid).name == "renamed-late"
    assert not replica.gaps
    assert replica.rebuilds == 1


def test_a_writer_holding_its_feed_id_keeps_later_writers_behind_it(db, processes):
    """On MySQL a feed id is the tail's plus one, under the tail's lock: a
    writer that took an id and has not committed keeps the next one waiting,
    so no reader ever sees a later row before it, nor has a gap to wait for."""
    from allotment.storage import feed

    if db.backend != "mysql":
        pytest.skip("the tail lock is MySQL's way of taking feed ids")
    replica = Replica(db)
    early = provider_service.create_provider(db, name="early")
    replica.catch_up()
    slow, fast = processes[0], processes[1]
    conn, tx, taken = rename_holding_its_feed_id(slow, early.uuid, "renamed-late")
    done = threading.Event()
    waiter = threading.Thread(
        target=lambda: (provider_service.create_provider(fast, name="quick"), done.set()))
    waiter.start()
    try:
        assert not done.wait(1.0), "a later writer committed before the open feed id"
        replica.catch_up()
        assert replica.head == taken - 1 and not replica.gaps
    finally:
        tx.commit()
        conn.close()
        waiter.join(30)
    assert done.is_set()
    with replica.current() as world:
        assert world.snapshot.get(early.uuid).name == "renamed-late"
        assert len(world.snapshot) == 2
    assert replica.head == taken + 1 and not replica.gaps
    with db.autocommit() as c:
        assert feed.last_after(c, taken - 1)[0] == [taken, taken + 1]


def test_a_rolled_back_feed_id_is_taken_by_the_next_writer(db, processes):
    from allotment.storage import feed

    if db.backend != "mysql":
        pytest.skip("the tail lock is MySQL's way of taking feed ids")
    replica = Replica(db)
    replica.catch_up()
    conn = processes[0].engine.connect()
    tx = conn.begin()
    taken = feed.flush(conn, feed.Notes(names=True))
    tx.rollback()
    conn.close()
    provider_service.create_provider(processes[1], name="after")
    with db.autocommit() as c:
        assert feed.head(c) == taken
    with replica.current() as world:
        assert len(world.snapshot) == 1
    assert not replica.gaps and replica.rebuilds == 1


def test_an_id_whose_transaction_rolled_back_is_given_up(db, processes, monkeypatch):
    from allotment.storage import cursor, feed

    if db.backend != "postgresql":
        pytest.skip("rows commit in id order here: a skipped id is never remembered")
    replica = Replica(db)
    replica.catch_up()
    conn = processes[0].engine.connect()
    tx = conn.begin()
    feed.flush(conn, feed.Notes(names=True))
    provider_service.create_provider(processes[1], name="after")
    replica.catch_up()
    assert replica.gaps
    tx.rollback()
    conn.close()
    monkeypatch.setattr(cursor, "GAP_PATIENCE", 0.0)
    # MySQL reports when transactions started to the second only, and a
    # connection's transaction can linger there briefly after it ended: the
    # gap may take a moment more to be given up, but must be.
    deadline = time.monotonic() + 5
    replica.catch_up()
    while replica.gaps and time.monotonic() < deadline:
        time.sleep(0.1)
        replica.catch_up()
    assert not replica.gaps
    assert replica.rebuilds == 1
