"""A write the database aborts for reasons of its own (a deadlock; on a
Galera cluster a certification failure, or a savepoint undone by an abort)
is run again: the client gets the answer one undisturbed server gives."""

from __future__ import annotations

import pymysql
import pytest
import sqlalchemy as sa

from allotment.storage import feed, retry
from tests.api.test_resource_providers import PROJECT, USER, allocate, create, new_uuid

ABORTS = {
    "deadlock": pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock"),
    "certification at commit": pymysql.err.OperationalError(1180, "Got error 149 during COMMIT"),
    "savepoint undone": pymysql.err.OperationalError(
        1305, "SAVEPOINT sa_savepoint_1 does not exist"),
}


@pytest.fixture
def abort_next_writes(monkeypatch):
    """``abort_next_writes(n, orig)``: the next ``n`` write transactions fail
    as they append to the change feed, as the database would abort them."""
    real = feed.flush
    left = []

    def flaky(conn, notes, **kw):
        if left:
            orig = left.pop()
            raise sa.exc.OperationalError("INSERT INTO placement_changes", {}, orig)
        return real(conn, notes, **kw)

    monkeypatch.setattr(feed, "flush", flaky)
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.0)

    def arm(times: int, orig: Exception) -> list:
        left.extend([orig] * times)
        return left
    return arm


@pytest.mark.parametrize("abort", sorted(ABORTS))
def test_every_kind_of_write_answers_as_if_never_aborted(api, abort_next_writes, abort):
    orig = ABORTS[abort]
    parent = create(api, "parent")
    left = abort_next_writes(2, orig)
    child = create(api, "child", parent=parent)
    assert not left

    abort_next_writes(2, orig)
    resp = api.put(f"/resource_providers/{parent}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}})
    assert resp.status == 200, resp

    consumer = allocate(api, parent, {"VCPU": 1})
    abort_next_writes(2, orig)
    assert api.delete(f"/allocations/{consumer}").status == 204

    other = create(api, "other")
    abort_next_writes(2, orig)
    resp = api.put(f"/resource_providers/{child}",
                   json={"name": "child", "parent_provider_uuid": other}, version="1.37")
    assert resp.status == 200, resp
    assert resp.json["parent_provider_uuid"] == other

    abort_next_writes(2, orig)
    assert api.put("/traits/CUSTOM_X").status == 201
    generation = api.get(f"/resource_providers/{parent}").json["generation"]
    abort_next_writes(2, orig)
    assert api.put(f"/resource_providers/{parent}/traits", json={
        "resource_provider_generation": generation, "traits": ["CUSTOM_X"]}).status == 200
    abort_next_writes(2, orig)
    assert api.put("/resource_classes/CUSTOM_GOLD", version="1.7").status == 201
    abort_next_writes(2, orig)
    assert api.delete(f"/resource_providers/{child}").status == 204


def test_a_write_aborted_every_time_is_a_503(api, abort_next_writes):
    parent = create(api, "parent")
    abort_next_writes(retry.ATTEMPTS, ABORTS["deadlock"])
    resp = api.put(f"/resource_providers/{parent}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}})
    assert resp.status == 503
    assert api.get(f"/resource_providers/{parent}/inventories").json["inventories"] == {}


def allocate_answer(api, provider: str, resources: dict[str, int]):
    return api.put(f"/allocations/{new_uuid()}", json={
        "allocations": {provider: {"resources": resources}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None},
        version="1.28")


def test_an_allocation_write_is_run_again_up_to_the_configured_count_then_409(
        api, conf, abort_next_writes):
    """Allocation writes follow ``[placement] allocation_conflict_retry_count``:
    aborted a few times, the claim is granted; aborted every time, it gets
    upstream's 409 after exactly that many attempts, and nothing is written."""
    count = conf.placement.allocation_conflict_retry_count
    parent = create(api, "parent")
    assert api.put(f"/resource_providers/{parent}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}}}).status == 200
    abort_next_writes(2, ABORTS["certification at commit"])
    allocate(api, parent, {"VCPU": 1})

    left = abort_next_writes(count + 5, ABORTS["deadlock"])
    resp = allocate_answer(api, parent, {"VCPU": 1})
    assert resp.status == 409, resp
    assert resp.json["errors"][0]["code"] == "placement.concurrent_update"
    assert len(left) == 5
    left.clear()
    usages = api.get(f"/resource_providers/{parent}/usages").json["usages"]
    assert usages == {"VCPU": 1}



def test_a_commit_of_unknown_outcome_is_a_503_and_not_run_again(api, abort_next_writes):
    """On Galera an error during COMMIT other than a certification failure
    (the node lost its primary component while appending the write set)
    leaves the outcome unknown: the write may have been applied by the
    other nodes.  Running it again answered a new consumer's committed claim
    409 (seen in the fault lab); it is a 503 that says so, run once."""
    parent = create(api, "parent")
    assert api.put(f"/resource_providers/{parent}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}}}).status == 200
    unknown = pymysql.err.OperationalError(
        1180, "Got error 6 \"No such device or address\" during COMMIT: Error while "
        "appending streaming replication fragment (Not connected to Primary Component)")
    left = abort_next_writes(3, unknown)
    resp = allocate_answer(api, parent, {"VCPU": 1})
    assert resp.status == 503, resp
    assert "may or may not have been made" in resp.json["errors"][0]["detail"]
    assert len(left) == 2  # tried once
