"""The OpenAPI document: complete, up to date, served, and true to the
schemas the service validates with."""

from __future__ import annotations

import json
from pathlib import Path

import falcon.inspect
import jsonschema
import pytest

from allotment.api import allocations, candidates_query, microversion, openapi
from allotment.api.openapi.document import ranges
from tests.api.candidate_helpers import World

DOC_FILE = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
METHODS = {"GET", "PUT", "POST", "DELETE", "PATCH"}


def _served(app) -> set[tuple[str, str]]:
    served = set()
    for route in falcon.inspect.inspect_routes(app.falcon_app):
        for method in route.methods:
            if method.method in METHODS and not method.internal:
                served.add((route.path, method.method))
    return served


def _documented(document: dict) -> set[tuple[str, str]]:
    return {(path, method.upper()) for path, item in document["paths"].items()
            for method in item}


def test_every_served_route_is_documented_and_nothing_else(app):
    assert _served(app) == _documented(openapi.build())


def test_checked_in_document_is_current():
    assert DOC_FILE.read_text() == openapi.dumps(openapi.build()), (
        "docs/openapi.json is stale: run `allotment-manage openapi -o docs/openapi.json`")


def test_document_is_valid_openapi_3_1():
    from openapi_spec_validator import validate

    validate(openapi.build())


def test_served_without_credentials(api):
    resp = api.get("/openapi.json", token=None, version=None)
    assert resp.status == 200
    assert resp.headers["content-type"] == "application/json"
    assert resp.json == json.loads(DOC_FILE.read_text())


def test_documented_bodies_are_the_validated_ones():
    doc = openapi.build()
    body = doc["paths"]["/allocations/{consumer_uuid}"]["put"]["requestBody"]
    by_range = body["x-openstack-microversions"]
    # One range per shape, in order, covering 1.0 to the latest version.
    assert by_range[0]["min_version"] == "1.0"
    assert by_range[-1]["max_version"] == microversion.max_version_string()
    for entry in by_range:
        for end in ("min_version", "max_version"):
            ver = microversion.parse(entry[end])
            assert entry["schema"] == allocations.put_schema(ver)
    assert [e["min_version"] for e in by_range] == ["1.0", "1.8", "1.12", "1.28", "1.34",
                                                     "1.38"]
    assert body["content"]["application/json"]["schema"] == allocations.put_schema((1, 39))


def test_query_parameters_carry_their_microversions():
    doc = openapi.build()
    params = {p.get("name"): p for p in
              doc["paths"]["/allocation_candidates"]["get"]["parameters"]}
    assert params["same_subtree"]["x-openstack-min-version"] == "1.36"
    assert params["root_required"]["x-openstack-min-version"] == "1.35"
    assert params["limit"]["schema"] == candidates_query.query_schema((1, 39))[
        "properties"]["limit"]
    assert "suffix" in params["resources"]["description"]
    usages = {p.get("name"): p for p in doc["paths"]["/usages"]["get"]["parameters"]}
    assert usages["project_id"]["required"] is True
    assert usages["consumer_type"]["x-openstack-min-version"] == "1.38"


def test_ranges_merge_equal_neighbours():
    shapes = ranges(lambda v: {"n": v >= (1, 5)}, "1.2")
    assert [(r["min_version"], r["max_version"], r["schema"]) for r in shapes] == [
        ("1.2", "1.4", {"n": False}), ("1.5", microversion.max_version_string(), {"n": True})]


@pytest.mark.parametrize("path,bad", [("/resource_providers", {"name": 5}),
                                      ("/resource_classes", {"name": "NOT_CUSTOM"})])
def test_documented_body_rejects_what_the_service_rejects(api, path, bad):
    schema = openapi.build()["paths"][path]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert api.post(path, json=bad).status == 400


def test_manage_command_writes_the_document(tmp_path):
    from allotment.cmd import manage

    target = tmp_path / "openapi.json"
    assert manage.main(["openapi", "--output", str(target)]) == 0
    assert json.loads(target.read_text()) == openapi.build()


def test_web_view_assets_have_documented_types(api):
    content = openapi.build()["paths"]["/ui/static/{name}"]["get"]["responses"]["200"][
        "content"]
    for name in ("style.css", "filter.js"):
        resp = api.get(f"/ui/static/{name}", token=None)
        assert resp.status == 200
        assert resp.headers["content-type"].split(";")[0] in content
    assert api.get("/ui/static/nothing.css", token=None).status == 404


def test_what_if_extensions_are_documented(api):
    doc = openapi.build()
    op = doc["paths"]["/allocation_candidates"]["get"]
    params = {p.get("name"): p for p in op["parameters"]}
    header = params["Allotment-Extensions"]
    assert header["in"] == "header" and header["schema"]["enum"] == ["1"]
    for name, since in (("ignore_consumers", "1.36"), ("preempt", "1.38")):
        assert params[name]["x-allotment-extension"] is True
        assert params[name]["x-openstack-min-version"] == since
        # Without the header the service does not know them.
        resp = api.get(f"/allocation_candidates?resources=VCPU:1&{name}=true")
        assert resp.status == 400
    assert params["preempt"]["schema"]["enum"] == ["true", "false"]
    item = op["responses"]["200"]["content"]["application/json"]["schema"][
        "properties"]["allocation_requests"]["items"]["properties"]
    assert item["displaces"]["x-allotment-extension"] is True
    assert item["evicts"]["x-openstack-min-version"] == "1.38"
    # What the service answers matches the documented schema.
    w = World(api)
    w.add("cn1", inv={"VCPU": 4})
    vm = w.use("cn1", {"VCPU": 3})
    resp = api.get(f"/allocation_candidates?resources=VCPU:2&preempt=true"
                   f"&ignore_consumers=in:{vm}", headers={"Allotment-Extensions": "1"})
    assert resp.status == 200
    assert resp.json["allocation_requests"][0]["displaces"] == [vm]
    assert resp.json["allocation_requests"][0]["evicts"] == []
    jsonschema.validate(resp.json, op["responses"]["200"]["content"]["application/json"][
        "schema"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"evicts": [{"consumer_uuid": vm}]},
                            {"type": "object", "properties": item})
