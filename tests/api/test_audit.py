"""``allotment-manage audit [--fix]`` on every backend: each planted
inconsistency is found, ``--fix`` repairs only those it can repair without
loss, and /metrics exports the findings."""

from __future__ import annotations

import contextlib
import io
import json

import sqlalchemy as sa

from allotment.cmd import audit_report, manage
from allotment.service import audit
from allotment.storage import consumer_join, feed, tables
from tests.api.candidate_helpers import World
from tests.api.test_metrics import scrape, value


@contextlib.contextmanager
def unchecked(db):
    """A connection with foreign keys not enforced, to plant rows a legacy
    database may hold; every process reloads its world after it."""
    with db.engine.connect() as conn:
        if db.backend == "sqlite":
            # Only outside a transaction; statements then commit one by one.
            conn = conn.execution_options(allotment_autocommit=True)
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        elif db.backend == "mysql":
            conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS=0")
            conn.commit()
        try:
            with conn.begin():
                if db.backend == "postgresql":
                    conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
                yield conn
        finally:
            if db.backend == "sqlite":
                conn.exec_driver_sql("PRAGMA foreign_keys=ON")
            elif db.backend == "mysql":
                conn.exec_driver_sql("SET FOREIGN_KEY_CHECKS=1")
            conn.commit()
    with db.write() as conn:
        feed.note_reset(conn)


def _id(conn, table, **where) -> int:
    query = sa.select(table.c.id)
    for column, v in where.items():
        query = query.where(table.c[column] == v)
    return conn.execute(query).scalar_one()


def plant(api, db, *, bad_root: bool = True) -> dict:
    """A world with one of each inconsistency, plus healthy neighbours.

    The world of an API process cannot be built over a stored root that
    disagrees with the parents (the snapshot refuses it): the audit finds
    those and ``--fix`` repairs them.
    """
    w = World(api)
    w.add("healthy", inv={"VCPU": 8})
    w.use("healthy", {"VCPU": 8})
    w.add("shrunk", inv={"VCPU": 10, "MEMORY_MB": 1024})
    w.use("shrunk", {"VCPU": 6, "MEMORY_MB": 512})
    w.use("shrunk", {"VCPU": 2})
    w.add("root-a")
    w.add("child", parent="root-a")
    w.add("root-b")
    w.add("alone-pool", inv={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"],
          aggs=["LONELY"])
    w.add("pool", inv={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggs=["A"])
    w.add("served", inv={"VCPU": 1}, aggs=["A"])
    emptied = w.use("served", {"VCPU": 1})
    w.add("owned", inv={"VCPU": 4})
    no_project = w.use("owned", {"VCPU": 1})
    no_user = w.use("owned", {"VCPU": 1})
    with unchecked(db) as conn:
        rp = tables.resource_providers
        shrunk = _id(conn, rp, name="shrunk")
        conn.execute(sa.update(tables.inventories)
                     .where(tables.inventories.c.resource_provider_id == shrunk,
                            tables.inventories.c.resource_class_id
                            == _id(conn, tables.resource_classes, name="VCPU"))
                     .values(total=5))
        if bad_root:
            conn.execute(sa.update(rp).where(rp.c.name == "child")
                         .values(root_provider_id=_id(conn, rp, name="root-b")))
        # Whichever value allocations name their consumer by (row id or UUID).
        consumer = conn.execute(sa.select(consumer_join.consumer_key_of_consumers())
                                .where(tables.consumers.c.uuid == emptied)).scalar_one()
        conn.execute(sa.delete(tables.allocations)
                     .where(consumer_join.consumer_key() == consumer))
        conn.execute(sa.update(tables.consumers).where(tables.consumers.c.uuid == no_project)
                     .values(project_id=987654))
        conn.execute(sa.update(tables.consumers).where(tables.consumers.c.uuid == no_user)
                     .values(user_id=987655))
    return {"world": w, "emptied": emptied, "no_project": no_project, "no_user": no_user}


def run_audit(db, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    fmt = "json" if "json" in args else "text"
    code = audit_report.main(db, fix="--fix" in args, fmt=fmt, out=out)
    return code, out.getvalue()


def test_a_clean_database_passes(api, db):
    w = World(api)
    w.add("cn", inv={"VCPU": 4})
    w.use("cn", {"VCPU": 4})
    code, text = run_audit(db)
    assert code == 0 and "No inconsistency found." in text


def test_each_planted_inconsistency_is_found(api, db):
    planted = plant(api, db)
    w = planted["world"]
    code, text = run_audit(db, "json")
    assert code == 1
    body = json.loads(text)
    assert body["over_capacity"] == [
        {"provider": w.uuids["shrunk"], "name": "shrunk", "resource_class": "VCPU",
         "used": 8, "capacity": 5, "over": 3}]
    assert body["consumers_without_allocations"] == [planted["emptied"]]
    assert {(f["consumer"], f["missing"], f["allocations"])
            for f in body["allocations_without_owner"]} == {
        (planted["no_project"], "project", 1), (planted["no_user"], "user", 1)}
    assert body["bad_roots"] == [
        {"provider": w.uuids["child"], "name": "child", "stored_root": w.uuids["root-b"],
         "expected_root": w.uuids["root-a"]}]
    assert [f["name"] for f in body["lonely_sharing"]] == ["alone-pool"]
    assert body["lonely_sharing"][0]["aggregates"] == [w.aggs["LONELY"]]
    _, text = run_audit(db)
    assert "shrunk (" in text and "over by 3" in text
    assert "Consumers without allocations: 1" in text


def test_fix_repairs_only_what_loses_nothing(api, db):
    planted = plant(api, db)
    w = planted["world"]
    code, text = run_audit(db, "--fix")
    assert code == 1  # over capacity, missing owners and the lonely pool remain
    assert "Consumers without allocations: 1 (1 repaired)" in text
    assert "disagrees with their parents: 1 (1 repaired)" in text
    code, text = run_audit(db, "json")
    body = json.loads(text)
    assert code == 1
    assert body["consumers_without_allocations"] == [] and body["bad_roots"] == []
    assert len(body["over_capacity"]) == 1
    assert len(body["allocations_without_owner"]) == 2
    assert len(body["lonely_sharing"]) == 1
    # The over-capacity allocations are all still there.
    usages = api.get(f"/resource_providers/{w.uuids['shrunk']}/usages").json["usages"]
    assert usages == {"VCPU": 8, "MEMORY_MB": 512}
    # The repaired root is what the API serves.
    child = api.get(f"/resource_providers/{w.uuids['child']}").json
    assert child["root_provider_uuid"] == w.uuids["root-a"]


def test_fix_leaves_a_clean_database_clean(api, db):
    w = World(api)
    w.add("cn", inv={"VCPU": 4})
    w.use("cn", {"VCPU": 1})
    assert run_audit(db, "--fix")[0] == 0
    assert api.get(f"/resource_providers/{w.uuids['cn']}/usages").json["usages"] == {"VCPU": 1}


def test_allotment_manage_audit(api, db, database_url, tmp_path):
    plant(api, db)
    config = tmp_path / "placement.conf"
    config.write_text(f"[placement_database]\nconnection = {database_url}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = manage.main(["--config-file", str(config), "audit"])
    assert code == 1 and "over by 3" in out.getvalue()


def test_audit_findings_as_metrics(api, db):
    plant(api, db, bad_root=False)
    audit.CACHE.clear()  # an earlier test's audit of this database is kept
    found = scrape(api)
    assert value(found, "allotment_audit_findings", check="over_capacity") == 1
    assert value(found, "allotment_audit_findings", check="bad_roots") == 0
    assert value(found, "allotment_audit_findings", check="lonely_sharing") == 1
    assert value(found, "allotment_audit_findings",
                 check="allocations_without_owner") == 2
    assert value(found, "allotment_audit_over_capacity", hostname="shrunk",
                 resourcetype="VCPU") == 3
    # Kept between scrapes: the audit reads every allocation.
    with unchecked(db) as conn:
        conn.execute(sa.delete(tables.consumers)
                     .where(tables.consumers.c.project_id == 987654))
    assert value(scrape(api), "allotment_audit_findings",
                 check="allocations_without_owner") == 2
