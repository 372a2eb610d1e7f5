"""Every Location header is an absolute URL, as upstream's are: the scheme,
the host (and port) the request named, the script name, then the path."""

from __future__ import annotations

import uuid as uuidlib

import pytest
import webob

HOST = {"Host": "placement.example.org:8780"}
BASE = "http://placement.example.org:8780"


def _provider(api) -> str:
    uuid = str(uuidlib.uuid4())
    assert api.post("/resource_providers", json={"name": uuid, "uuid": uuid}).status == 200
    return uuid


@pytest.mark.parametrize("version", ["1.0", "1.20", "latest"])
def test_provider_creation(api, version):
    uuid = str(uuidlib.uuid4())
    resp = api.post("/resource_providers", json={"name": "rp", "uuid": uuid},
                    version=version, headers=HOST)
    assert resp.headers["location"] == f"{BASE}/resource_providers/{uuid}"


def test_inventory_creation(api):
    uuid = _provider(api)
    resp = api.post(f"/resource_providers/{uuid}/inventories", headers=HOST, json={
        "resource_class": "DISK_GB", "total": 10, "resource_provider_generation": 0})
    assert resp.status == 201
    assert resp.headers["location"] == f"{BASE}/resource_providers/{uuid}/inventories/DISK_GB"


def test_resource_class_creation_post_and_put(api):
    resp = api.post("/resource_classes", json={"name": "CUSTOM_LOC"}, headers=HOST)
    assert resp.headers["location"] == f"{BASE}/resource_classes/CUSTOM_LOC"
    for status in (201, 204):  # created, then confirmed: both name it
        resp = api.put("/resource_classes/CUSTOM_LOC_PUT", headers=HOST)
        assert resp.status == status
        assert resp.headers["location"] == f"{BASE}/resource_classes/CUSTOM_LOC_PUT"


def test_renamed_resource_class_before_1_7_has_none(api):
    api.post("/resource_classes", json={"name": "CUSTOM_OLD"})
    resp = api.put("/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"},
                   version="1.6", headers=HOST)
    assert resp.status == 200 and "location" not in resp.headers


def test_trait_creation(api):
    for status in (201, 204):
        resp = api.put("/traits/CUSTOM_LOC", headers=HOST)
        assert resp.status == status
        assert resp.headers["location"] == f"{BASE}/traits/CUSTOM_LOC"


def test_default_port_left_out_and_script_name_kept(api):
    # The scheme's own port is not repeated; the prefix the service is
    # mounted under is part of the URL.
    resp = api.put("/traits/CUSTOM_PORT", headers={"Host": "placement.example.org:80"})
    assert resp.headers["location"] == "http://placement.example.org/traits/CUSTOM_PORT"
    req = webob.Request.blank("/traits/CUSTOM_MOUNTED", method="PUT", headers={
        **HOST, "X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"})
    req.script_name = "/placement"
    resp = req.get_response(api.app)
    assert resp.status_code == 201
    assert resp.headers["location"] == f"{BASE}/placement/traits/CUSTOM_MOUNTED"
