"""/resource_classes at every microversion."""

from __future__ import annotations

import os_resource_classes
import pytest


def names(api, **kw) -> list[str]:
    return [rc["name"] for rc in api.get("/resource_classes", **kw).json["resource_classes"]]


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_not_there_before_1_2(api, version):
    assert api.get("/resource_classes", version=version).status == 404
    assert api.get("/resource_classes/VCPU", version=version).status == 404
    assert api.post("/resource_classes", json={"name": "CUSTOM_A"},
                    version=version).status == 404


def test_standard_classes_are_listed_with_links(api):
    resp = api.get("/resource_classes", version="1.2")
    assert resp.status == 200
    listed = {rc["name"]: rc for rc in resp.json["resource_classes"]}
    assert set(os_resource_classes.STANDARDS) <= set(listed)
    assert listed["VCPU"]["links"] == [{"rel": "self", "href": "/resource_classes/VCPU"}]


def test_create_show_and_list_custom(api):
    resp = api.post("/resource_classes", json={"name": "CUSTOM_GOLD"}, version="1.2")
    assert resp.status == 201
    assert resp.headers["location"].endswith("/resource_classes/CUSTOM_GOLD")
    assert resp.text == ""
    assert "content-type" not in resp.headers
    shown = api.get("/resource_classes/CUSTOM_GOLD")
    assert shown.status == 200
    assert shown.json == {"name": "CUSTOM_GOLD", "links": [
        {"rel": "self", "href": "/resource_classes/CUSTOM_GOLD"}]}
    assert shown.headers["cache-control"] == "no-cache"
    assert "last-modified" in shown.headers
    assert "CUSTOM_GOLD" in names(api)


def test_create_duplicate_is_409(api):
    assert api.post("/resource_classes", json={"name": "CUSTOM_GOLD"}).status == 201
    resp = api.post("/resource_classes", json={"name": "CUSTOM_GOLD"})
    assert resp.status == 409
    assert "Conflicting resource class already exists: CUSTOM_GOLD" in resp.error()["detail"]


@pytest.mark.parametrize("body", [
    {"name": "VCPU"}, {"name": "GOLD"}, {"name": "CUSTOM_"}, {"name": "CUSTOM_lower"},
    {"name": "CUSTOM_" + "A" * 249}, {"name": 7}, {}, {"name": "CUSTOM_A", "x": 1}, [],
    {"name": "CUSTOM_ÜBER"},
])
def test_create_invalid_is_400(api, body):
    resp = api.post("/resource_classes", json=body)
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]


def test_unknown_class_is_404(api):
    resp = api.get("/resource_classes/CUSTOM_NOPE")
    assert resp.status == 404
    assert "No such resource class CUSTOM_NOPE" in resp.error()["detail"]


@pytest.mark.parametrize("version", ["1.2", "1.6"])
def test_put_renames_before_1_7(api, version):
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    resp = api.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"},
                   version=version)
    assert resp.status == 200
    assert resp.json["name"] == "CUSTOM_NEW"
    assert "last-modified" not in resp.headers
    assert api.get("/resource_classes/CUSTOM_OLD").status == 404
    assert api.get("/resource_classes/CUSTOM_NEW").status == 200


def test_rename_errors_before_1_7(api):
    api.post("/resource_classes", json={"name": "CUSTOM_A"})
    api.post("/resource_classes", json={"name": "CUSTOM_B"})
    taken = api.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, version="1.6")
    assert taken.status == 409
    assert "Resource class already exists: CUSTOM_B" in taken.error()["detail"]
    standard = api.put("/resource_classes/VCPU", json={"name": "CUSTOM_C"}, version="1.6")
    assert standard.status == 400
    assert "Cannot update standard resource class VCPU" in standard.error()["detail"]
    missing = api.put("/resource_classes/CUSTOM_Z", json={"name": "CUSTOM_C"}, version="1.6")
    assert missing.status == 404
    bad = api.put("/resource_classes/CUSTOM_A", json={"name": "nope"}, version="1.6")
    assert bad.status == 400


def test_put_is_create_or_confirm_from_1_7(api):
    created = api.put("/resource_classes/CUSTOM_IDEM", version="1.7")
    assert created.status == 201
    assert created.headers["location"].endswith("/resource_classes/CUSTOM_IDEM")
    again = api.put("/resource_classes/CUSTOM_IDEM", version="1.7")
    assert again.status == 204
    assert api.get("/resource_classes/CUSTOM_IDEM").status == 200


@pytest.mark.parametrize("name", ["VCPU", "lower", "CUSTOM_bad"])
def test_put_non_custom_is_400_from_1_7(api, name):
    assert api.put(f"/resource_classes/{name}", version="1.7").status == 400


def test_delete_custom(api):
    api.post("/resource_classes", json={"name": "CUSTOM_GONE"})
    resp = api.delete("/resource_classes/CUSTOM_GONE")
    assert resp.status == 204
    assert resp.text == ""
    assert api.get("/resource_classes/CUSTOM_GONE").status == 404
    assert api.delete("/resource_classes/CUSTOM_GONE").status == 404


def test_delete_standard_is_400(api):
    resp = api.delete("/resource_classes/VCPU")
    assert resp.status == 400
    assert "Cannot delete standard resource class VCPU" in resp.error()["detail"]
    assert api.get("/resource_classes/VCPU").status == 200


def test_a_standard_class_is_as_new_as_its_row(api, db):
    """Upstream answers the time the class's row was written (when standard
    names were synced), not the time of the request."""
    import datetime

    import sqlalchemy as sa

    from allotment.storage import feed, tables

    written = datetime.datetime(2021, 3, 4, 5, 6, 7)
    with db.write() as conn:
        conn.execute(sa.update(tables.resource_classes).values(created_at=written,
                                                               updated_at=None))
        feed.note_names(conn)
    shown = api.get("/resource_classes/VCPU", version="1.15")
    assert shown.headers["last-modified"] == "Thu, 04 Mar 2021 05:06:07 GMT"
    listed = api.get("/resource_classes", version="1.15")
    assert listed.headers["last-modified"] == "Thu, 04 Mar 2021 05:06:07 GMT"
