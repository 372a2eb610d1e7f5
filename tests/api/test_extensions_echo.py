"""Every answer to a request carrying ``Allotment-Extensions`` carries it
back with the level offered: errors (a misused extension's 400 among them)
and other URLs alike, so a client can tell allotment's refusal from
upstream's; a request without the header never gets it."""

from __future__ import annotations

import pytest

from tests.harness.wsgi_client import Client

EXT = {"Allotment-Extensions": "1"}


@pytest.mark.parametrize(("query", "version", "header"), [
    ("resources=VCPU:1&can_split=MEMORY_MB", "latest", "1"),             # misused extension
    ("resources=VCPU:1&explain=maybe", "latest", "1"),
    ("resources=VCPU:1&isolate=_A", "latest", "1"),
    ("resources=VCPU:1&bogus=1", "latest", "1"),                    # standard 400
    ("resources=VCPU:1", "1.35", "1"),                              # too old for extensions
    ("resources=VCPU:1", "latest", "2"),                            # a level not offered
])
def test_refusals_carry_the_header(api, query, version, header):
    resp = api.get(f"/allocation_candidates?{query}", version=version,
                   headers={"Allotment-Extensions": header})
    assert resp.status == 400, resp
    assert resp.headers.getall("Allotment-Extensions") == ["1"]
    without = api.get(f"/allocation_candidates?{query}", version=version)
    assert "Allotment-Extensions" not in without.headers


def test_success_carries_it_once(api):
    resp = api.get("/allocation_candidates?resources=VCPU:1", headers=EXT)
    assert resp.status == 200 and resp.headers.getall("Allotment-Extensions") == ["1"]


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/resource_providers", 200),
    ("GET", "/", 200),
    ("GET", "/resource_providers/5f4bd6a2-1b2b-4f0c-8f0b-000000000001", 404),
    ("DELETE", "/resource_providers", 405),
    ("GET", "/nowhere", 404),
])
def test_other_urls_and_their_errors_carry_it(api, method, path, status):
    resp = api.request(method, path, headers=EXT)
    assert resp.status == status
    assert resp.headers.getall("Allotment-Extensions") == ["1"]
    assert "Allotment-Extensions" not in api.request(method, path).headers


def test_an_unauthenticated_request_carries_it(app):
    resp = Client(app, token=None).get("/resource_providers", headers=EXT)
    assert resp.status == 401 and resp.headers["Allotment-Extensions"] == "1"
