"""allotment-api behind real Keystone, reached as operators reach it: the
allotment CLI and osc-placement (``openstack resource provider list``)
through a clouds.yaml and Keystone's service catalog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from tests.cmd.test_commands import free_port, wait_until_serving
from tests.keystone.conftest import placement_conf

BIN = Path(sys.executable).parent
# One server for the module, on one test worker.
pytestmark = pytest.mark.xdist_group("keystone-clients")


def point_catalog_at(keystone, url: str) -> None:
    """Keystone's placement endpoints in RegionOne name this server (other
    regions are other lanes', tests/kolla/osc.py)."""
    admin = {"X-Auth-Token": keystone.token("admin", {"system": {"all": True}})}
    api = keystone.url + "/v3"
    services = requests.get(api + "/services?type=placement", headers=admin, timeout=60)
    service = services.json()["services"][0]["id"]
    endpoints = requests.get(api + f"/endpoints?service_id={service}", headers=admin,
                             timeout=60).json()["endpoints"]
    for endpoint in endpoints:
        if endpoint["region_id"] != "RegionOne":
            continue
        resp = requests.patch(api + f"/endpoints/{endpoint['id']}", headers=admin, timeout=60,
                              json={"endpoint": {"url": url}})
        assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module")
def served(keystone, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    conf = placement_conf(tmp, keystone.url)
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "allotment-api"), "--config-file", str(conf),
         "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_serving(port, proc)
        url = f"http://127.0.0.1:{port}"
        point_catalog_at(keystone, url)
        clouds = tmp / "clouds.yaml"
        clouds.write_text(json.dumps({"clouds": {"kolla": {
            "auth": {"auth_url": keystone.url, "username": "proj-admin", "password": "secret",
                     "project_name": "demo", "project_domain_name": "Default",
                     "user_domain_name": "Default"},
            "region_name": "RegionOne", "interface": "public",
            "identity_api_version": 3}}}))
        name = f"compute-{uuid.uuid4().hex[:8]}"
        created = requests.post(url + "/resource_providers", timeout=60, json={"name": name},
                                headers={"X-Auth-Token": keystone.token("proj-admin"),
                                         "OpenStack-API-Version": "placement 1.20"})
        assert created.status_code == 200, created.text
        yield {"url": url, "clouds": clouds, "name": name, "uuid": created.json()["uuid"]}
    finally:
        proc.terminate()
        proc.wait(30)


def client_env(served) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    return {**env, "OS_CLIENT_CONFIG_FILE": str(served["clouds"]), "HOME": str(
        served["clouds"].parent)}


def test_allotment_cli_through_clouds_yaml(served):
    result = subprocess.run(
        [str(BIN / "allotment"), "--os-cloud", "kolla", "-f", "json", "hosts"],
        capture_output=True, text=True, timeout=180, env=client_env(served),
        cwd=served["clouds"].parent)
    assert result.returncode == 0, result.stderr
    assert served["name"] in result.stdout


def test_openstack_resource_provider_list(keystone, served):
    result = subprocess.run(
        [keystone.accounts["openstack"], "--os-cloud", "kolla", "resource", "provider",
         "list", "-f", "json"],
        capture_output=True, text=True, timeout=180, env=client_env(served),
        cwd=served["clouds"].parent)
    assert result.returncode == 0, result.stderr
    listed = {p["uuid"]: p["name"] for p in json.loads(result.stdout)}
    assert listed[served["uuid"]] == served["name"]


def test_openstack_as_a_project_reader_is_refused(keystone, served, tmp_path):
    clouds = json.loads(served["clouds"].read_text())
    clouds["clouds"]["kolla"]["auth"]["username"] = "proj-reader"
    (tmp_path / "clouds.yaml").write_text(json.dumps(clouds))
    env = {**client_env(served), "OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml")}
    result = subprocess.run(
        [keystone.accounts["openstack"], "--os-cloud", "kolla", "resource", "provider",
         "list"], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert "403" in result.stderr
