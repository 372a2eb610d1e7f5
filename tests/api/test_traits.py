"""/traits and /traits/{name}."""

from __future__ import annotations

import os_traits
import pytest


def listing(api, query: str = "") -> list[str]:
    resp = api.get(f"/traits{query}")
    assert resp.status == 200, resp
    return resp.json["traits"]


@pytest.mark.parametrize("version", ["1.0", "1.5"])
def test_not_there_before_1_6(api, version):
    assert api.get("/traits", version=version).status == 404
    assert api.put("/traits/CUSTOM_A", version=version).status == 404
    assert api.get("/traits/HW_CPU_X86_AVX2", version=version).status == 404


def test_standard_traits_are_synced(api):
    assert set(os_traits.get_traits()) <= set(listing(api))
    assert api.get("/traits/HW_CPU_X86_AVX2").status == 204


def test_put_creates_then_confirms(api):
    created = api.put("/traits/CUSTOM_FAST")
    assert created.status == 201
    assert created.headers["location"].endswith("/traits/CUSTOM_FAST")
    assert created.headers["cache-control"] == "no-cache"
    assert api.put("/traits/CUSTOM_FAST").status == 204
    got = api.get("/traits/CUSTOM_FAST")
    assert got.status == 204
    assert "last-modified" in got.headers


def test_cache_headers_from_1_15_only(api):
    assert "last-modified" not in api.put("/traits/CUSTOM_X", version="1.14").headers
    assert "last-modified" not in api.get("/traits", version="1.14").headers


@pytest.mark.parametrize("name", ["FAST", "CUSTOM_", "CUSTOM_lower", "HW_CPU_X86_AVX2",
                                  "CUSTOM_" + "A" * 249, "CUSTOM_É"])
def test_put_invalid_name_is_400(api, name):
    resp = api.put(f"/traits/{name}")
    assert resp.status == 400
    assert "The trait is invalid" in resp.error()["detail"]


def test_get_unknown_is_404(api):
    resp = api.get("/traits/CUSTOM_NOPE")
    assert resp.status == 404
    assert "No such trait(s): CUSTOM_NOPE" in resp.error()["detail"]


def test_delete(api):
    api.put("/traits/CUSTOM_TEMP")
    assert api.delete("/traits/CUSTOM_TEMP").status == 204
    assert api.get("/traits/CUSTOM_TEMP").status == 404
    assert api.delete("/traits/CUSTOM_TEMP").status == 404


def test_delete_standard_is_400(api):
    resp = api.delete("/traits/HW_CPU_X86_AVX2")
    assert resp.status == 400
    assert "Cannot delete standard trait HW_CPU_X86_AVX2" in resp.error()["detail"]


def test_name_filters(api):
    for name in ("CUSTOM_A1", "CUSTOM_A2", "CUSTOM_B1"):
        api.put(f"/traits/{name}")
    assert listing(api, "?name=startswith:CUSTOM_A") == ["CUSTOM_A1", "CUSTOM_A2"]
    assert listing(api, "?name=in:CUSTOM_B1,CUSTOM_A2,NOT_A_TRAIT") == [
        "CUSTOM_A2", "CUSTOM_B1"]
    # Wildcards are literal characters in a prefix.
    assert listing(api, "?name=startswith:CUSTOM_%") == []
    assert listing(api, "?name=startswith:CUSTOM__") == []


def test_bad_name_filter_is_400(api):
    resp = api.get("/traits?name=CUSTOM_A")
    assert resp.status == 400
    assert "Badly formatted name parameter" in resp.error()["detail"]


def test_unknown_query_param_is_400(api):
    resp = api.get("/traits?colour=red")
    assert resp.status == 400
    assert "Invalid query string parameters" in resp.error()["detail"]


@pytest.mark.parametrize("value", ["yes", "1", ""])
def test_associated_must_be_boolean(api, value):
    resp = api.get(f"/traits?associated={value}")
    assert resp.status == 400
    assert 'only accepts "true" or "false"' in resp.error()["detail"]


def test_associated_false_lists_unassociated(api):
    api.put("/traits/CUSTOM_LONELY")
    assert "CUSTOM_LONELY" in listing(api, "?associated=false")
    assert "CUSTOM_LONELY" not in listing(api, "?associated=TRUE")
