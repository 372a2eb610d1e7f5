"""CORS through oslo.middleware when [cors] allowed_origin is set."""

from __future__ import annotations

import pytest

ORIGIN = "http://dashboard.example.org"


@pytest.fixture
def conf_overrides():
    return {"cors": {"allowed_origin": [ORIGIN]}}


def test_preflight_is_answered_before_auth(api):
    resp = api.request("OPTIONS", "/resource_providers", token=None, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
    assert resp.status == 200
    assert resp.headers["access-control-allow-origin"] == ORIGIN


def test_simple_request_gets_allow_origin_and_exposed_headers(api):
    resp = api.get("/", headers={"Origin": ORIGIN})
    assert resp.headers["access-control-allow-origin"] == ORIGIN
    exposed = resp.headers["access-control-expose-headers"].lower()
    assert "openstack-api-version" in exposed


def test_other_origins_get_nothing(api):
    resp = api.get("/", headers={"Origin": "http://evil.example.org"})
    assert "access-control-allow-origin" not in resp.headers


def test_without_cors_config_no_headers(database_url, db):
    from allotment.server.app import create_app
    from tests.conftest import make_conf
    from tests.harness.wsgi_client import Client

    resp = Client(create_app(make_conf(database_url), db=db)).get(
        "/", headers={"Origin": ORIGIN})
    assert "access-control-allow-origin" not in resp.headers
