"""SQLite that stops accepting writes: read-only, or its disk full.

The database file stays; what changes is whether SQLite may write to it
(``PRAGMA query_only``, as on a file or mount turned read-only) or grow it
(``PRAGMA max_page_count``, as on a full disk).  Writes must then be
refused with a 503 in Placement's error shape, reads keep working, nothing
half-written stays behind, and writes work again as soon as the database
does -- with the in-memory world never showing a write that did not commit.
"""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from allotment.storage import tables


@pytest.fixture
def sqlite_db(db):
    if db.backend != "sqlite":
        pytest.skip("SQLite's own failure modes")
    return db


def _with_pragma(db, pragma: str):
    """Every connection from now on runs ``pragma`` first; returns an undo."""
    def on_connect(dbapi_conn, _record):
        dbapi_conn.execute(pragma)

    event.listen(db.engine, "connect", on_connect)
    db.engine.dispose()  # pooled connections would not run it

    def undo():
        event.remove(db.engine, "connect", on_connect)
        db.engine.dispose()
    return undo


def _assert_503(resp) -> None:
    assert resp.status == 503, resp
    error = resp.error()
    assert error["status"] == 503 and error["title"] == "Service Unavailable"
    assert "Traceback" not in resp.text
    assert resp.headers.get("Retry-After") == "1"


def _provider_count(db) -> int:
    with db.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(
            tables.resource_providers)).scalar()


def _host(api, vcpus: int = 8) -> str:
    rp = api.post("/resource_providers", json={"name": f"h-{uuid.uuid4()}"}).json["uuid"]
    assert api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": vcpus}}}).status == 200
    return rp


def _claims(rp: str, count: int) -> dict:
    return {str(uuid.uuid4()): {"allocations": {rp: {"resources": {"VCPU": 1}}},
                                "project_id": "p", "user_id": "u",
                                "consumer_generation": None}
            for _ in range(count)}


def test_read_only_database_refuses_writes_with_503_and_recovers(api, sqlite_db):
    rp = _host(api)
    undo = _with_pragma(sqlite_db, "PRAGMA query_only = ON")
    try:
        _assert_503(api.post("/allocations", json=_claims(rp, 2), version="1.36"))
        _assert_503(api.post("/resource_providers", json={"name": "never"}))
        _assert_503(api.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 1, "inventories": {"VCPU": {"total": 4}}}))
        _assert_503(api.delete(f"/resource_providers/{rp}"))
        # Reads do not need to write.
        assert api.get(f"/resource_providers/{rp}").status == 200
        cands = api.get("/allocation_candidates?resources=VCPU:1")
        assert cands.status == 200
        assert cands.json["provider_summaries"][rp]["resources"]["VCPU"]["used"] == 0
    finally:
        undo()
    assert api.get(f"/resource_providers/{rp}/usages").json["usages"] == {"VCPU": 0}
    assert api.post("/allocations", json=_claims(rp, 2), version="1.36").status == 204
    assert api.get(f"/resource_providers/{rp}/usages").json["usages"] == {"VCPU": 2}


def test_full_disk_refuses_writes_whole_and_recovers(api, sqlite_db):
    rp = _host(api, vcpus=100_000)
    with sqlite_db.engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
    # Room for a little more: writes succeed until the file cannot grow.
    undo = _with_pragma(sqlite_db, f"PRAGMA max_page_count = {pages + 3}")
    granted = refused = 0
    try:
        for _ in range(400):
            claims = _claims(rp, 20)
            resp = api.post("/allocations", json=claims, version="1.36")
            if resp.status == 503:
                _assert_503(resp)
                refused += 1
                if refused >= 3:
                    break
            else:
                assert resp.status == 204, resp
                granted += 20
        assert refused, "the disk never filled"
        # Usage in the world (candidates) and in the tables: what was granted.
        cands = api.get("/allocation_candidates?resources=VCPU:1").json
        assert cands["provider_summaries"][rp]["resources"]["VCPU"]["used"] == granted
    finally:
        undo()
    with sqlite_db.engine.connect() as conn:
        used = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(tables.allocations.c.used),
                                                       0))).scalar()
    assert used == granted
    assert api.post("/allocations", json=_claims(rp, 2), version="1.36").status == 204
    assert api.get(f"/resource_providers/{rp}/usages").json["usages"] == {
        "VCPU": granted + 2}
    assert _provider_count(sqlite_db) == 1
