"""GET /resource_providers/{uuid}/allocations."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from tests.api.allocation_helpers import claim, generation, make_provider, new_uuid
from tests.harness.statements import mysql_commands, recording


def test_unknown_provider_is_404(api):
    missing = new_uuid()
    resp = api.get(f"/resource_providers/{missing}/allocations")
    assert resp.status == 404
    assert (f"Resource provider '{missing}' not found: No resource provider with uuid "
            f"{missing} found" in resp.error()["detail"])


def test_empty(api):
    rp = make_provider(api, VCPU=4)
    resp = api.get(f"/resource_providers/{rp}/allocations")
    assert resp.status == 200
    assert resp.json == {"allocations": {}, "resource_provider_generation": generation(api, rp)}


def test_keyed_by_consumer(api):
    rp = make_provider(api, VCPU=8, DISK_GB=100)
    other = make_provider(api, VCPU=8)
    a, b = new_uuid(), new_uuid()
    assert claim(api, a, rp, VCPU=2, DISK_GB=10).status == 204
    assert claim(api, b, rp, VCPU=1).status == 204
    assert claim(api, new_uuid(), other, VCPU=1).status == 204

    got = api.get(f"/resource_providers/{rp}/allocations").json
    assert got == {
        "allocations": {
            a: {"resources": {"VCPU": 2, "DISK_GB": 10}, "consumer_generation": 1},
            b: {"resources": {"VCPU": 1}, "consumer_generation": 1},
        },
        "resource_provider_generation": generation(api, rp),
    }
    old = api.get(f"/resource_providers/{rp}/allocations", version="1.27").json
    assert old["allocations"][a] == {"resources": {"VCPU": 2, "DISK_GB": 10}}


def test_cache_headers(api):
    rp = make_provider(api, VCPU=8)
    claim(api, new_uuid(), rp, VCPU=1)
    old = api.get(f"/resource_providers/{rp}/allocations", version="1.14")
    assert "cache-control" not in old.headers and "last-modified" not in old.headers
    new = api.get(f"/resource_providers/{rp}/allocations", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith(" GMT")


def test_needs_permission(api):
    rp = make_provider(api, VCPU=8)
    resp = api.get(f"/resource_providers/{rp}/allocations", token="someone")
    assert resp.status == 403


def test_one_statement_and_no_transaction(api, db):
    """A host's resource tracker asks this every period: the provider and
    its allocations come in one statement, without BEGIN or COMMIT."""
    rp = make_provider(api, VCPU=8)
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2).status == 204
    commits: list[object] = []

    def committed(conn):
        commits.append(conn)

    for engine in db.engines:
        event.listen(engine, "commit", committed)
    try:
        with recording(db) as sent:
            got = api.get(f"/resource_providers/{rp}/allocations", version="1.0")
    finally:
        for engine in db.engines:
            event.remove(engine, "commit", committed)
    assert got.json == {"allocations": {consumer: {"resources": {"VCPU": 2}}},
                        "resource_provider_generation": generation(api, rp)}
    assert len([s for s in sent if "allocations" in s]) == 1
    assert [s for s in sent if "allocations" not in s and "resource_providers" in s] == []
    assert commits == []


def test_one_round_trip_on_mysql(api, db):
    """On MySQL nothing goes to the server but the statement: no ping
    before it, no switch to autocommit and back, no ROLLBACK after it."""
    if db.backend != "mysql":
        pytest.skip("the driver's own commands are counted on PyMySQL")
    rp = make_provider(api, VCPU=8)
    consumer = new_uuid()
    assert claim(api, consumer, rp, VCPU=2).status == 204
    url = f"/resource_providers/{rp}/allocations"
    assert api.get(url, version="1.0").status == 200  # a connection made
    for _ in range(2):  # and taken again from the pool
        with mysql_commands() as sent:
            got = api.get(url, version="1.0")
        assert got.json == {"allocations": {consumer: {"resources": {"VCPU": 2}}},
                            "resource_provider_generation": generation(api, rp)}
        assert len(sent) == 1 and "allocations" in sent[0], sent


def test_malformed_uuid_is_404(api):
    resp = api.get("/resource_providers/not%20a%20uuid/allocations")
    assert resp.status == 404
