"""The web view over HTTP (in-process, SQLite and PostgreSQL): sign-in,
redirects, policy, errors, and the numbers on the pages."""

from __future__ import annotations

import re

import pytest

from allotment.client import DirectTransport, PlacementClient
from tests.cli.world import seed


@pytest.fixture
def world(app):
    client = PlacementClient(DirectTransport(app), headers={"X-Roles": "admin"})
    return seed(client)


def test_browser_without_token_is_sent_to_sign_in(api):
    resp = api.get("/ui", token=None, headers={"Accept": "text/html,*/*"})
    assert resp.status == 303
    assert resp.headers["location"] == "/ui/login"
    # An API client (no HTML wanted) gets the API's 401.
    resp = api.get("/ui", token=None)
    assert resp.status == 401
    assert resp.error()["title"] == "Unauthorized"


def test_sign_in_sets_a_strict_cookie(api):
    page = api.get("/ui/login", token=None)
    assert page.status == 200 and 'name="token"' in page.text
    resp = api.post("/ui/login", body="token=admin", token=None,
                    content_type="application/x-www-form-urlencoded")
    assert resp.status == 303 and resp.headers["location"] == "/ui"
    cookie = resp.headers["set-cookie"]
    assert cookie.startswith("allotment_token=admin;")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
    assert "Secure" not in cookie
    over_tls = api.post("/ui/login", body="token=admin", token=None,
                        content_type="application/x-www-form-urlencoded",
                        headers={"X-Forwarded-Proto": "https"})
    assert "Secure" not in over_tls.headers["set-cookie"]  # proxy headers not trusted


@pytest.mark.parametrize("conf_overrides", [
    {"oslo_middleware": {"enable_proxy_headers_parsing": True}}])
def test_cookie_is_secure_behind_a_tls_proxy(api):
    resp = api.post("/ui/login", body="token=admin", token=None,
                    content_type="application/x-www-form-urlencoded",
                    headers={"X-Forwarded-Proto": "https"})
    assert resp.headers["set-cookie"].endswith("; Secure")


def test_sign_in_errors(api):
    resp = api.post("/ui/login", body="token=", token=None,
                    content_type="application/x-www-form-urlencoded")
    assert resp.status == 400 and "A token is required" in resp.text
    resp = api.post("/ui/login", json={"token": "admin"}, token=None)
    assert resp.status == 415
    assert resp.error()["title"] == "Unsupported Media Type"


def test_cookie_authenticates_only_the_web_view(api, world):
    resp = api.get("/ui", token=None, headers={"Cookie": "allotment_token=admin"})
    assert resp.status == 200 and "compute-1" in resp.text
    resp = api.get("/resource_providers", token=None,
                   headers={"Cookie": "allotment_token=admin"})
    assert resp.status == 401


def test_policy_is_the_apis(api, world):
    resp = api.get("/ui", token="alice")
    assert resp.status == 403
    assert "allotment:web:view" in resp.error()["detail"]
    resp = api.get("/ui", token="alice", headers={"X-Roles": "reader"})
    assert resp.status == 403
    assert api.get("/ui", token="alice", headers={"X-Roles": "admin"}).status == 200


def test_hosts_page_numbers(api, world):
    resp = api.get("/ui?q=compute")
    assert resp.status == 200
    assert "text/html" in resp.headers["content-type"]
    rows = re.findall(r'<tr class="host" data-name="([^"]+)" data-uuid="([^"]+)"', resp.text)
    assert rows == [("compute-1", world.host1), ("compute-2", world.host2)]
    cells = re.findall(r'data-rc="(\w+)"\s+data-used="(\d+)" data-capacity="(\d+)"', resp.text)
    assert ("VCPU", "2", "16") in cells  # compute-2: 8 VCPU at ratio 2, MIGRATION uses 2
    assert ("VGPU", "1", "4") in cells
    assert "sharing</span>" not in resp.text
    assert "sharing</span>" in api.get("/ui?q=shared-disk").text


def test_tree_page_and_errors(api, world):
    resp = api.get(f"/ui/trees/{world.numa}")
    assert resp.status == 200
    cards = re.findall(r'<section class="provider\s*" id="rp-([^"]+)"', resp.text)
    assert cards == [world.host1, world.numa, world.gpu]
    assert f'id="rp-{world.pool}"' in resp.text  # the sharing provider
    assert "HW_CPU_X86_AVX2" in resp.text and "CUSTOM_GOLD" in resp.text
    missing = api.get("/ui/trees/00000000-0000-0000-0000-000000000000")
    assert missing.status == 404
    assert missing.headers["content-type"] == "application/json"


def test_page_escapes_names(api, app):
    client = PlacementClient(DirectTransport(app), headers={"X-Roles": "admin"})
    client.providers.create("<script>alert(1)</script>")
    resp = api.get("/ui")
    assert "<script>alert(1)</script>" not in resp.text
    assert "&lt;script&gt;" in resp.text
