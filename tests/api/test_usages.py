"""GET /usages (1.9) and its consumer-type grouping (1.38)."""

from __future__ import annotations

import pytest

from tests.api.allocation_helpers import body, make_provider, new_uuid


@pytest.fixture
def world(api):
    """Project p1: user u1 (INSTANCE, 2 VCPU + 10 DISK_GB), user u2 (MIGRATION,
    1 VCPU), an untyped consumer of u1 (4 VCPU); project p2: 3 VCPU."""
    rp = make_provider(api, VCPU=32, DISK_GB=1000)
    def put(project, user, ctype, version="latest", **resources):
        data = body(rp, project=project, user=user, consumer_type=ctype, **resources)
        assert api.put(f"/allocations/{new_uuid()}", json=data, version=version).status == 204
    put("p1", "u1", "INSTANCE", VCPU=2, DISK_GB=10)
    put("p1", "u2", "MIGRATION", VCPU=1)
    put("p1", "u1", None, version="1.37", VCPU=4)
    put("p2", "u1", "INSTANCE", VCPU=3)
    return rp


def test_not_before_1_9(api):
    assert api.get("/usages?project_id=p1", version="1.8").status == 404


def test_project_totals(api, world):
    resp = api.get("/usages?project_id=p1", version="1.9")
    assert resp.status == 200
    assert resp.json == {"usages": {"VCPU": 7, "DISK_GB": 10}}
    assert api.get("/usages?project_id=p1&user_id=u1", version="1.37").json == {
        "usages": {"VCPU": 6, "DISK_GB": 10}}
    assert api.get("/usages?project_id=nobody", version="1.9").json == {"usages": {}}


def test_cache_headers(api, world):
    assert "cache-control" not in api.get("/usages?project_id=p1", version="1.14").headers
    resp = api.get("/usages?project_id=p1", version="1.15")
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["last-modified"].endswith(" GMT")


def test_grouped_by_consumer_type(api, world):
    assert api.get("/usages?project_id=p1").json == {"usages": {
        "INSTANCE": {"VCPU": 2, "DISK_GB": 10, "consumer_count": 1},
        "MIGRATION": {"VCPU": 1, "consumer_count": 1},
        "unknown": {"VCPU": 4, "consumer_count": 1},
    }}
    assert api.get("/usages?project_id=p1&user_id=u1").json == {"usages": {
        "INSTANCE": {"VCPU": 2, "DISK_GB": 10, "consumer_count": 1},
        "unknown": {"VCPU": 4, "consumer_count": 1},
    }}


@pytest.mark.parametrize("ctype,expected", [
    ("INSTANCE", {"INSTANCE": {"VCPU": 2, "DISK_GB": 10, "consumer_count": 1}}),
    ("all", {"all": {"VCPU": 7, "DISK_GB": 10, "consumer_count": 3}}),
    ("unknown", {"unknown": {"VCPU": 4, "consumer_count": 1}}),
    ("COW", {}),
    ("ALL", {}),
    ("UNKNOWN", {}),
])
def test_filtered_by_consumer_type(api, world, ctype, expected):
    resp = api.get(f"/usages?project_id=p1&consumer_type={ctype}")
    assert resp.status == 200
    assert resp.json == {"usages": expected}


@pytest.mark.parametrize("version,query,fragment", [
    ("1.9", "", "'project_id' is a required property"),
    ("1.9", "project_id=", "should be non-empty"),
    ("1.9", "project_id=p&user_id=", "should be non-empty"),
    ("1.9", "project_id=" + "x" * 256, "is too long"),
    ("1.9", "project_id=p&dummy=1", "Additional properties are not allowed"),
    ("1.37", "project_id=p&consumer_type=INSTANCE", "Additional properties are not allowed"),
    ("1.38", "project_id=p&consumer_type=instance", "does not match"),
])
def test_bad_queries(api, version, query, fragment):
    resp = api.get(f"/usages?{query}", version=version)
    assert resp.status == 400
    detail = resp.error()["detail"]
    assert "Invalid query string parameters" in detail and fragment in detail


@pytest.mark.parametrize("query,keyword", [
    ("project_id=", "minLength"),
    ("project_id=p&user_id=" + "u" * 256, "maxLength"),
    ("", "required"),
])
def test_bad_query_names_the_failed_schema_keyword(api, query, keyword):
    # Like every other query Placement validates, the report carries the
    # schema keyword that failed, not just jsonschema's short message.
    detail = api.get(f"/usages?{query}", version="1.9").error()["detail"]
    assert f"Failed validating '{keyword}'" in detail


def test_needs_permission(api, world):
    assert api.get("/usages?project_id=p1", token="someone").status == 403
