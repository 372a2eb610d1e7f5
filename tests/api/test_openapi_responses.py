"""Answers at every microversion match the documented response schemas, on
a world where every listing has something in it (the schema-driven run
mostly meets empty or missing things)."""

from __future__ import annotations

import jsonschema
import pytest

from allotment.api import microversion, openapi
from allotment.client import DirectTransport, PlacementClient
from tests.cli.world import seed

DOC = openapi.build()


def _documented(path: str, method: str, status: int) -> dict:
    return DOC["paths"][path][method]["responses"][str(status)]["content"][
        "application/json"]["schema"]


def _since(path: str, method: str) -> tuple[int, int]:
    return microversion.parse(DOC["paths"][path][method]["x-openstack-min-version"])


@pytest.fixture
def world(app):
    return seed(PlacementClient(DirectTransport(app), headers={"X-Roles": "admin"}))


def test_every_read_at_every_microversion(api, world):
    reads = [
        ("/", "/"),
        ("/resource_providers", "/resource_providers"),
        ("/resource_providers/{uuid}", f"/resource_providers/{world.numa}"),
        ("/resource_providers/{uuid}/inventories",
         f"/resource_providers/{world.numa}/inventories"),
        ("/resource_providers/{uuid}/inventories/{resource_class}",
         f"/resource_providers/{world.numa}/inventories/VCPU"),
        ("/resource_providers/{uuid}/usages", f"/resource_providers/{world.numa}/usages"),
        ("/resource_providers/{uuid}/allocations",
         f"/resource_providers/{world.numa}/allocations"),
        ("/resource_providers/{uuid}/aggregates",
         f"/resource_providers/{world.host1}/aggregates"),
        ("/resource_providers/{uuid}/traits", f"/resource_providers/{world.numa}/traits"),
        ("/allocations/{consumer_uuid}", f"/allocations/{world.instance}"),
        ("/usages", "/usages?project_id=proj"),
        ("/resource_classes", "/resource_classes"),
        ("/resource_classes/{name}", "/resource_classes/VCPU"),
        ("/traits", "/traits"),
        ("/allocation_candidates", "/allocation_candidates?resources=VCPU:1,DISK_GB:5"),
    ]
    checked = 0
    for template, url in reads:
        schema = _documented(template, "get", 200)
        for version in microversion.VERSIONS:
            if microversion.parse(version) < _since(template, "get"):
                continue
            resp = api.get(url, version=version)
            assert resp.status == 200, (url, version, resp)
            try:
                jsonschema.validate(resp.json, schema)
            except jsonschema.ValidationError as exc:
                pytest.fail(f"GET {url} at {version}: {exc.message}")
            checked += 1
    assert checked > 400


def test_writes_answer_as_documented(api, world):
    created = api.post("/resource_providers", json={"name": "new"}, version="1.20")
    jsonschema.validate(created.json, _documented("/resource_providers", "post", 200))
    assert api.post("/resource_providers", json={"name": "old"}, version="1.19").status == 201
    renamed = api.put("/resource_classes/CUSTOM_A", version="1.7")
    assert renamed.status == 201
    moved = api.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, version="1.6")
    assert moved.status == 200
    jsonschema.validate(moved.json, _documented("/resource_classes/{name}", "put", 200))
