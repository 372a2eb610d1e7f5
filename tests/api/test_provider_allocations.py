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


def _claim_in_turn(api, rp, amounts):
    """Consumers claiming ``amounts`` of VCPU in turn: allocation ids
    grow with the claims, the amounts do not."""
    consumers = []
    for amount in amounts:
        consumer = new_uuid()
        assert claim(api, consumer, rp, VCPU=amount).status == 204
        consumers.append(consumer)
    return consumers


@pytest.mark.parametrize("version", ["1.0", "1.15", "1.28"])
def test_consumers_in_the_order_they_claimed(api, version):
    """The body lists consumers in the order of their allocations (their
    ids), not in the order the database finds them by (provider, class,
    amount)."""
    rp = make_provider(api, VCPU=64, DISK_GB=100)
    consumers = _claim_in_turn(api, rp, [5, 1, 4, 2, 3])
    later = new_uuid()
    assert claim(api, later, rp, DISK_GB=1, VCPU=6).status == 204
    got = api.get(f"/resource_providers/{rp}/allocations", version=version)
    assert list(got.json["allocations"]) == [*consumers, later]
    assert got.json["allocations"][later]["resources"] == {"DISK_GB": 1, "VCPU": 6}


def _statement_of(db, run):
    """The one statement (text, parameters) that names allocations sent
    while ``run`` runs."""
    sent: list[tuple[str, object]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append((statement, parameters))

    for engine in db.engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        run()
    finally:
        for engine in db.engines:
            event.remove(engine, "before_cursor_execute", record)
    found = [(s, p) for s, p in sent if "allocations" in s]
    assert len(found) == 1, sent
    return found[0]


def test_amounts_alone_below_1_15(api, db):
    """Before 1.15 (no last-modified) and 1.28 (no consumer generations)
    neither the allocations' dates nor the consumers' generations are read;
    from 1.15 they are, and last-modified is the newest date."""
    rp = make_provider(api, VCPU=8)
    _claim_in_turn(api, rp, [1, 2])
    url = f"/resource_providers/{rp}/allocations"
    lean, _ = _statement_of(db, lambda: api.get(url, version="1.14"))
    assert "created_at" not in lean and "generation AS consumer_generation" not in lean
    full, _ = _statement_of(db, lambda: api.get(url, version="1.15"))
    assert "created_at" in full and "consumer_generation" in full


def _plans(api, db, explain: str) -> list[list]:
    """The database's plan (``explain`` + the statement) of a provider's
    allocations as read at 1.0 and at 1.28, with three of them held."""
    rp = make_provider(api, VCPU=64)
    _claim_in_turn(api, rp, [3, 1, 2])
    plans = []
    for version in ("1.0", "1.28"):
        statement, parameters = _statement_of(
            db, lambda v=version: api.get(f"/resource_providers/{rp}/allocations", version=v))
        with db.engine.connect() as conn:
            plans.append(conn.exec_driver_sql(explain + statement, parameters).all())
    return plans


def test_no_temporary_table_or_sort_on_mysql(api, db):
    """MariaDB finds a provider's allocations by (provider, class, amount):
    asked for them in id order it copies them to a temporary table and
    sorts them, on every host's every period.  The statement asks for no
    order (the rows are sorted in Python) and the server makes neither."""
    if db.backend != "mysql":
        pytest.skip("MySQL's and MariaDB's plans")
    for plan in _plans(api, db, "EXPLAIN "):
        extra = " ".join(str(row[-1]) for row in plan)
        assert "temporary" not in extra and "filesort" not in extra, plan


def test_found_by_index_on_sqlite(api, db):
    """SQLite finds the provider by its UUID, then its allocations, their
    consumers and classes each by an index: written as the provider outer-
    joined to a nested join, the statement made SQLite materialise every
    allocation of every provider first (tens of ms at 1,000 hosts, on every
    host's every period)."""
    if db.backend != "sqlite":
        pytest.skip("SQLite's plans")
    for plan in _plans(api, db, "EXPLAIN QUERY PLAN "):
        steps = [str(row[-1]) for row in plan]
        assert all(step.startswith("SEARCH") for step in steps), steps
