"""A database that goes back in time is followed back, by every process.

Commits a database acknowledged can be lost: a crash under relaxed
durability, a Galera cluster bootstrapped after a coordinated crash, a
failover to an asynchronous replica.  The database then holds what it held
at an earlier moment and hands the lost transactions' ids out again.  A
process whose world applied those changes must notice at its next look and
read the world again -- and must not skip the changes that take the lost
ids (storage/feed.py, ``Position``).  Here the database is put back with
tests/harness/back_in_time.py; tests/faults/test_lost_commits.py loses real
commits by crashing real servers.
"""

from __future__ import annotations

import pytest

from allotment.engine import first_round
from allotment.service import allocations as allocation_service
from allotment.service import inventories as inventory_service
from allotment.service import resource_providers as provider_service
from allotment.service.consumers import ConsumerRequest
from allotment.storage import feed
from allotment.world.sync import Replica
from tests.harness.back_in_time import Backup
from tests.world.conftest import rename_holding_its_feed_id
from tests.world.test_sync import candidates, state

pytestmark = pytest.mark.slow


def _host(db, name: str, vcpus: int = 100):
    rp = provider_service.create_provider(db, name=name)
    inventory_service.replace_inventories(db, rp.uuid, 0, {"VCPU": {"total": vcpus}},
                                          reserved_may_equal_total=True)
    return rp


def _claim(db, host, n: int = 1) -> None:
    for i in range(n):
        consumer = f"00000000-0000-0000-0001-{i:012d}" if n > 1 else None
        allocation_service.replace_for_consumer(db, allocation_service.ConsumerAllocations(
            ConsumerRequest(uuid=consumer or _fresh(), project_id="p", user_id="u"),
            {host.uuid: {"VCPU": 1}}), attempts=10)


_COUNT = [0]


def _fresh() -> str:
    _COUNT[0] += 1
    return f"00000000-0000-0000-0002-{_COUNT[0]:012d}"


def _equals_a_fresh_load(db, replica: Replica) -> None:
    fresh = Replica(db)
    fresh.rebuild()
    with replica.current() as world:
        assert state(world) == state(fresh.world)
        assert candidates(world) == candidates(fresh.world)


@pytest.fixture(params=["epoch emptied", "epoch kept"])
def keep_epoch(request, db) -> bool:
    """On PostgreSQL both ways of telling (the epoch, the last row's stamp)
    are tried on their own; elsewhere there is no epoch."""
    if request.param == "epoch kept" and db.backend != "postgresql":
        pytest.skip("only PostgreSQL has an epoch")
    return request.param == "epoch kept"


def test_a_world_follows_the_database_back(db, keep_epoch):
    h1 = _host(db, "h1")
    replica = Replica(db)
    replica.catch_up()
    backup = Backup(db)
    # What the database acknowledges and then loses.
    _claim(db, h1, 5)
    h3 = _host(db, "h3")
    with replica.current() as world:
        assert h3.uuid in world.snapshot.index
        assert world.snapshot.resources_of(h1.uuid) == {"VCPU": (100, 5)}
    backup.restore(db, keep_epoch=keep_epoch)
    with replica.current() as world:
        assert h3.uuid not in world.snapshot.index
        assert world.snapshot.resources_of(h1.uuid) == {"VCPU": (100, 0)}
    _equals_a_fresh_load(db, replica)
    assert replica.rebuilds == 2


@pytest.mark.parametrize("after", [1, 12], ids=["fewer writes than lost",
                                                "more writes than lost"])
def test_changes_that_take_the_lost_ids_are_not_skipped(db, keep_epoch, after):
    """The database hands the lost ids out again: a reader that had applied
    rows with those ids must still apply the new ones (on MySQL a new
    compute node stayed invisible to scheduling until every process
    restarted)."""
    h1 = _host(db, "h1")
    replica = Replica(db)
    replica.catch_up()
    backup = Backup(db)
    _claim(db, h1, 4)
    _host(db, "lost")
    replica.catch_up()
    lost_head = replica.head
    backup.restore(db, keep_epoch=keep_epoch)
    new = [_host(db, f"new-{i}") for i in range(after)]
    with db.read() as conn:
        now_head = feed.head(conn)
    assert (now_head <= lost_head) == (after == 1) or db.backend == "postgresql"
    with replica.current() as world:
        for rp in new:
            assert rp.uuid in world.snapshot.index
        assert world.snapshot.resources_of(h1.uuid) == {"VCPU": (100, 0)}
    _equals_a_fresh_load(db, replica)
    # Claims made after the loss add up to what the database holds.
    _claim(db, new[0], 3)
    _equals_a_fresh_load(db, replica)


def test_a_world_that_missed_the_loss_is_read_again_once(db, keep_epoch):
    """A replica that had not applied the lost rows (it looked before they
    came) loses nothing it applied: it still reads the world again only if
    it cannot tell, and in any case ends equal to the database."""
    h1 = _host(db, "h1")
    replica = Replica(db)
    replica.catch_up()
    backup = Backup(db)
    _claim(db, h1, 2)
    backup.restore(db, keep_epoch=keep_epoch)
    _host(db, "after")
    _equals_a_fresh_load(db, replica)


def test_a_lost_commit_below_the_head_is_caught_by_the_epoch(db, processes):
    """PostgreSQL commits feed rows out of id order: a row with a lower id
    can commit after the head the reader stands on, and a crash can lose it
    while the head survives.  The head's stamp then says nothing; the epoch,
    emptied by crash recovery, does."""
    if db.backend != "postgresql":
        pytest.skip("rows commit in id order here: a lost row takes every later one with it")
    early = provider_service.create_provider(db, name="early")
    replica = Replica(db)
    replica.catch_up()
    slow, fast = processes[0], processes[1]
    conn, tx, taken = rename_holding_its_feed_id(slow, early.uuid, "renamed-late")
    provider_service.create_provider(fast, name="quick")
    replica.catch_up()
    assert taken in replica.gaps
    # The database as it is once "quick" committed and before the slow
    # writer does: what survives a crash that loses only the slow commit.
    backup = Backup(db)
    tx.commit()
    conn.close()
    with replica.current() as world:
        assert world.snapshot.get(early.uuid).name == "renamed-late"
    # (Another id may still be awaited: one a rolled-back retry took.)
    assert taken not in replica.gaps
    backup.restore(db)
    with replica.current() as world:
        assert world.snapshot.get(early.uuid).name == "early"
    _equals_a_fresh_load(db, replica)


@pytest.mark.parametrize("block", [first_round.BLOCK, 2], ids=["trees", "blocks of 2"])
def test_kept_answers_go_with_the_world(api, db, monkeypatch, block):
    """Answers kept between requests describe the world they were made in:
    after the database went back, none of them is handed out again (nor
    a first round kept joined in blocks of trees)."""
    from tests.api.test_resource_providers import allocate, create

    monkeypatch.setattr(first_round, "BLOCK", block)

    hosts = [create(api, f"host-{i}") for i in range(3)]
    for h in hosts:
        assert api.put(f"/resource_providers/{h}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 4}}}).status == 200
    path = "/allocation_candidates?resources=VCPU:2&limit=10"
    before = api.get(path).json
    backup = Backup(db)
    for _ in range(2):
        allocate(api, hosts[0], {"VCPU": 2})
    lost = create(api, "lost-host")
    assert api.put(f"/resource_providers/{lost}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}).status == 200
    full = api.get(path).json
    assert len(full["allocation_requests"]) == 3  # host-0 is full, lost-host came
    api.get(path)  # asked again: answered from what was kept
    backup.restore(db)
    after = api.get(path).json
    assert after == before
    usages = api.get(f"/resource_providers/{hosts[0]}/usages").json["usages"]
    assert usages == {"VCPU": 0}
    assert api.get(f"/resource_providers/{lost}").status == 404
