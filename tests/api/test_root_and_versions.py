"""The root document, microversion negotiation and response headers."""

from __future__ import annotations

import email.utils

import pytest

from tests.harness.wsgi_client import Client


def test_root_lists_the_version_range_without_a_token(app):
    resp = Client(app, token=None).get("/")
    assert resp.status == 200
    assert resp.json == {"versions": [{
        "id": "v1.0", "min_version": "1.0", "max_version": "1.39",
        "status": "CURRENT", "links": [{"rel": "self", "href": ""}],
    }]}
    assert resp.headers["content-type"] == "application/json"


def test_no_version_header_means_the_minimum(app):
    resp = Client(app, version=None).get("/")
    assert resp.headers["openstack-api-version"] == "placement 1.0"
    assert resp.headers["vary"] == "openstack-api-version"
    # Cache headers only appear from 1.15.
    assert "last-modified" not in resp.headers
    assert "cache-control" not in resp.headers


def test_latest_means_the_maximum(api):
    resp = api.get("/", version="latest")
    assert resp.headers["openstack-api-version"] == "placement 1.39"


@pytest.mark.parametrize("version", ["1.15", "1.39"])
def test_cache_headers_from_1_15(api, version):
    resp = api.get("/", version=version)
    assert resp.headers["cache-control"] == "no-cache"
    assert email.utils.parsedate_to_datetime(resp.headers["last-modified"])


@pytest.mark.parametrize("version", ["1.40", "2.0", "0.9"])
def test_unserved_version_is_406_with_the_range(api, version):
    resp = api.get("/resource_classes", version=version)
    assert resp.status == 406
    error = resp.error()
    assert error["status"] == 406
    assert error["title"] == "Not Acceptable"
    assert f"Unacceptable version header: {version}" in error["detail"]
    assert error["min_version"] == "1.0"
    assert error["max_version"] == "1.39"
    assert "openstack-api-version" not in resp.headers


@pytest.mark.parametrize("version", ["1.a", "one", "1", "1.2.3"])
def test_malformed_version_is_400(api, version):
    resp = api.get("/", version=version)
    assert resp.status == 400
    assert "invalid version string" in resp.error()["detail"]


def test_other_services_versions_are_ignored(api):
    resp = api.get("/", version=None,
                   headers={"OpenStack-API-Version": "compute 2.1, placement 1.20"})
    assert resp.headers["openstack-api-version"] == "placement 1.20"


def test_every_response_has_a_request_id(api):
    for resp in (api.get("/"), api.get("/nowhere"), api.get("/", version="9.9")):
        assert resp.headers["x-openstack-request-id"].startswith("req-")


def test_error_request_id_matches_header(api):
    resp = api.get("/nowhere")
    assert resp.error()["request_id"] == resp.headers["x-openstack-request-id"]


def test_global_request_id_is_accepted(api):
    resp = api.get("/", headers={
        "X-Openstack-Request-Id": "req-6a7d4d5a-2f8b-4d3c-9d8b-2c7f6a2b1e0f"})
    assert resp.status == 200


def test_root_is_served_without_trailing_slash_too(app):
    from webob import Request

    req = Request.blank("")
    req.environ["PATH_INFO"] = ""
    resp = req.get_response(app)
    assert resp.status_code == 200
