"""Hostile input over HTTP: oversized, deeply nested, non-UTF-8, NUL-laden
and huge-numbered requests get a quick 4xx in Placement's error shape and
change nothing.  The limits are configurable (docs/limits.md)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from allotment.api import limits
from tests.api.test_resource_providers import create

RP = "7c1f3e4a-2b5d-4c6e-8f90-a1b2c3d4e5f6"
CONSUMER = "0d8a7f3e-5c2b-4e1a-9f60-1b2c3d4e5f70"

# The routes, each with one URL, so no method of any route is skipped.
ROUTE_URLS = [
    "/resource_classes", "/resource_classes/CUSTOM_A", "/traits", "/traits/CUSTOM_A",
    "/allocations", "/allocation_candidates", f"/allocations/{CONSUMER}",
    "/resource_providers", f"/resource_providers/{RP}",
    f"/resource_providers/{RP}/inventories", f"/resource_providers/{RP}/inventories/VCPU",
    f"/resource_providers/{RP}/aggregates", f"/resource_providers/{RP}/traits",
    f"/resource_providers/{RP}/usages", f"/resource_providers/{RP}/allocations",
    "/usages", "/reshaper", "/openapi.json",
    "/ui", f"/ui/trees/{RP}", "/ui/login", "/ui/static/style.css",
    "/metrics", "/ui/capacity", "/ui/what-if", "/ui/logout", "/favicon.ico",
]


def assert_placement_error(resp, status: int, *detail_parts: str) -> dict:
    assert resp.status == status, resp
    assert resp.headers["Content-Type"] == "application/json"
    error = resp.error()
    assert error["status"] == status
    for part in detail_parts:
        assert part in error["detail"], error["detail"]
    return error


@pytest.fixture
def provider(api) -> str:
    create(api, "hostile", uuid=RP)
    resp = api.put(f"/resource_providers/{RP}/inventories", json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    assert resp.status == 200, resp
    return RP


def world(api) -> str:
    parts = [api.get("/resource_providers").json, api.get("/traits").json,
             api.get("/resource_classes").json]
    for rp in api.get("/resource_providers").json["resource_providers"]:
        for sub in ("inventories", "traits", "aggregates", "allocations"):
            parts.append(api.get(f"/resource_providers/{rp['uuid']}/{sub}").json)
    return json.dumps(parts, sort_keys=True)


def test_every_route_is_covered(app) -> None:
    from allotment.runtime import Runtime
    from allotment.server.app import routes

    templates = [path for path, _ in routes(Runtime(conf=None, db=None), api=None)]
    assert len(templates) - 1 == len(ROUTE_URLS)  # all but the root document


# --- bodies ----------------------------------------------------------------

def test_body_over_the_default_limit_is_413(api, provider) -> None:
    before = world(api)
    padded = b'{"name": "big"' + b" " * (1024 * 1024) + b"}"
    resp = api.post("/resource_providers", body=padded, content_type="application/json")
    assert_placement_error(resp, 413, "max_request_body_size (1048576)")
    assert world(api) == before


def test_every_route_refuses_an_oversized_body(api, provider) -> None:
    # Refused before routing: even where no body is read, or the method
    # does not exist, a declared 2 MiB body never reaches a handler.
    body = b"[" + b"0," * (1024 * 1024) + b"0]"
    for url in ROUTE_URLS:
        for method in ("PUT", "POST", "DELETE", "GET"):
            resp = api.request(method, url, body=body, content_type="application/json")
            assert_placement_error(resp, 413)


class TestConfiguredBodyLimit:
    @pytest.fixture
    def conf_overrides(self) -> dict:
        return {"oslo_middleware": {"max_request_body_size": 2048}}

    def test_limit_comes_from_oslo_middleware_option(self, api, provider) -> None:
        body = {"name": "x" * 100, "uuid": str(uuid.uuid4())}
        fits = json.dumps(body).encode().ljust(2048)
        assert api.post("/resource_providers", body=fits,
                        content_type="application/json").status == 200
        body["uuid"] = str(uuid.uuid4())
        too_big = json.dumps(body).encode().ljust(2049)
        resp = api.post("/resource_providers", body=too_big, content_type="application/json")
        assert_placement_error(resp, 413, "(2048)")
        assert api.get(f"/resource_providers/{body['uuid']}").status == 404

    def test_a_lying_content_length_reads_no_more_than_the_limit(self, app, provider) -> None:
        import webob

        req = webob.Request.blank("/resource_providers", method="POST")
        req.headers.update({"X-Auth-Token": "admin", "Content-Type": "application/json",
                            "OpenStack-API-Version": "placement latest"})
        req.body = b'{"name": "liar"' + b" " * 5000 + b"}"
        req.headers["Content-Length"] = "100"
        resp = req.get_response(app)
        # Only the 100 declared bytes are read: a truncated document.
        assert resp.status_int == 400
        assert "Malformed JSON" in resp.json["errors"][0]["detail"]


@pytest.mark.parametrize("depth", [33, 500, 990, 5000, 100_000])
def test_deeply_nested_json_is_400(api, provider, depth) -> None:
    before = world(api)
    nested = b"[" * depth + b"]" * depth
    resp = api.post("/resource_providers", body=nested, content_type="application/json")
    assert_placement_error(resp, 400, "Malformed JSON")
    doc = b'{"inventories": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"
    resp = api.put(f"/resource_providers/{RP}/inventories", body=doc,
                   content_type="application/json")
    assert_placement_error(resp, 400, "Malformed JSON")
    assert world(api) == before


def test_nesting_within_the_limit_reaches_the_schema(api, provider) -> None:
    nested = b"[" * 32 + b"]" * 32
    resp = api.post("/resource_providers", body=nested, content_type="application/json")
    assert_placement_error(resp, 400, "JSON does not validate")


@pytest.mark.parametrize("raw", [
    b'{"name": "a\xff\xfeb"}',                 # not UTF-8 at all
    b'{"name": "a\xc0\x80b"}',                 # overlong NUL
    b'{"name": "a\\u0000b"}',                  # escaped NUL
    b'{"name": "a\x00b"}',                     # raw NUL inside a string
    b'{"name": "ab"}\x00',                     # NUL after the document
    b'{"na\\u0000me": "ab"}',                  # NUL in a key
    b'{"name": "\\ud800"}',                    # lone surrogate
    b"\xef\xbb\xbf" + b'{"name": "bom"}',      # byte-order mark
])
def test_bytes_no_database_stores_are_400(api, provider, raw) -> None:
    before = world(api)
    resp = api.post("/resource_providers", body=raw, content_type="application/json")
    assert_placement_error(resp, 400)
    assert world(api) == before


@pytest.mark.parametrize("number", [
    str(2 ** 31), str(2 ** 63), str(10 ** 30), "1" + "0" * 5000, "1e400", "-1e400", "1e-400",
])
def test_huge_numbers_in_bodies_are_400(api, provider, number) -> None:
    before = world(api)
    for path, doc in [
        (f"/resource_providers/{RP}/inventories",
         '{"resource_provider_generation": 1, "inventories": {"VCPU": {"total": %s}}}'),
        (f"/resource_providers/{RP}/inventories",
         '{"resource_provider_generation": %s, "inventories": {}}'),
        (f"/allocations/{CONSUMER}",
         '{"allocations": {"' + RP + '": {"resources": {"VCPU": %s}}}, "project_id": "p", '
         '"user_id": "u", "consumer_generation": null}'),
    ]:
        resp = api.put(path, body=(doc % number).encode(), content_type="application/json")
        # A generation no provider has is a conflict, as upstream answers.
        assert resp.status in (400, 409), resp
        assert_placement_error(resp, resp.status)
    assert world(api) == before


# --- query strings ----------------------------------------------------------

def test_every_route_refuses_an_overlong_query_string(api, provider) -> None:
    query = "name=" + "x" * 8200
    for url in ROUTE_URLS:
        resp = api.get(f"{url}?{query}")
        assert_placement_error(resp, 414, "max_query_string_length (8192 bytes)")


def test_query_string_just_under_the_limit_is_served(api, provider) -> None:
    query = "name=" + "x" * (8192 - 5)
    assert api.get(f"/resource_providers?{query}").status == 200


@pytest.mark.parametrize("query", ["name=a%00b", "%00=1", "resources=VCPU:1%00",
                                   "name=%FF%FE", "%C3%28=1", "name=%ED%A0%80"])
def test_nul_and_non_utf8_in_query_strings_are_400(api, provider, query) -> None:
    # Refused before routing, also where the query string would be ignored.
    for url in ROUTE_URLS:
        resp = api.get(f"{url}?{query}")
        assert_placement_error(resp, 400, "Invalid query string")


@pytest.mark.parametrize("path", [
    "/resource_providers/%00", "/resource_providers/%FF%FE", f"/resource_providers/{RP}%00",
    "/traits/CUSTOM_%00", "/traits/CUSTOM_%FF", "/resource_classes/CUSTOM_%00",
    "/resource_classes/CUSTOM_%C3%28", f"/allocations/{CONSUMER[:-1]}%00",
    f"/resource_providers/{RP}/inventories/VCPU%00",
])
def test_nul_and_non_utf8_in_paths_are_4xx(api, provider, path) -> None:
    before = world(api)
    # A name or id with a NUL names nothing (404), or is invalid (400), as
    # on any other backend: PostgreSQL, which refuses such text, is never
    # asked about it.
    for method in ("GET", "PUT", "DELETE"):
        resp = api.request(method, path, json={"x": 1} if method == "PUT" else None)
        if method == "GET" and path.startswith("/allocations/"):
            # As upstream: any consumer id reads as one without allocations.
            assert (resp.status, resp.json) == (200, {"allocations": {}})
            continue
        assert 400 <= resp.status < 500, resp
        assert resp.error()["status"] == resp.status
    assert world(api) == before


def test_too_many_parameters_is_400(api, provider) -> None:
    query = "&".join(["name=a"] * 1001)
    resp = api.get(f"/resource_providers?{query}")
    assert_placement_error(resp, 400, "max_query_parameters (1000)")
    assert api.get("/resource_providers?" + "&".join(["name=a"] * 1000)).status == 200


def test_too_many_request_groups_is_400(api, provider) -> None:
    groups = "&".join(f"resources{i}=VCPU:1" for i in range(1, 130))
    resp = api.get(f"/allocation_candidates?{groups}&group_policy=none")
    error = assert_placement_error(resp, 400, "129 request groups", "max_request_groups (128)")
    assert error["code"] == "placement.query.bad_value"
    groups = "&".join(f"resources{i}=VCPU:1" for i in range(1, 129))
    assert api.get(f"/allocation_candidates?{groups}&group_policy=none").status == 200


@pytest.mark.parametrize("url", ["/allocation_candidates?resources=VCPU:1&",
                                 "/resource_providers?"])
def test_too_many_any_of_members_is_400(api, provider, url) -> None:
    traits = ",".join(f"CUSTOM_T{i}" for i in range(257))
    resp = api.get(f"{url}required=in:{traits}")
    assert_placement_error(resp, 400, "257 values", "max_any_of_members (256)")
    aggs = ",".join(str(uuid.UUID(int=i)) for i in range(1, 258))
    resp = api.get(f"{url}member_of=!in:{aggs}", headers={})
    # 257 UUIDs are longer than the default query string limit.
    assert resp.status in (400, 414), resp


class TestRaisedQueryLimits:
    """With the bounds raised far past their defaults, the parsers' own cost
    stays linear: thousands of groups or repeats take well under a second
    each, where a quadratic parse took tens of seconds."""

    @pytest.fixture
    def conf_overrides(self) -> dict:
        return {"allotment": {"max_query_string_length": 1024 * 1024,
                              "max_query_parameters": 100_000,
                              "max_request_groups": 100_000,
                              "max_any_of_members": 100_000}}

    @pytest.mark.parametrize("query", [
        "resources=VCPU:1&" + "&".join(f"required=CUSTOM_T{i}" for i in range(5000)),
        "resources=VCPU:1&" + "&".join(f"member_of={uuid.UUID(int=i + 1)}"
                                       for i in range(5000)),
        "&".join(f"resources{i}=VCPU:1&required{i}=HW_CPU_X86_AVX2" for i in range(1, 3000))
        + "&group_policy=none",
        "resources=VCPU:1&required=in:" + ",".join(f"CUSTOM_T{i}" for i in range(20000)),
    ])
    def test_big_queries_cost_little(self, api, provider, query) -> None:
        started = time.monotonic()
        resp = api.get(f"/allocation_candidates?{query}")
        elapsed = time.monotonic() - started
        assert resp.status in (200, 400), resp
        assert elapsed < 3.0, elapsed


@pytest.mark.parametrize("amount", [str(2 ** 63), str(10 ** 30), "9" * 4000])
def test_huge_amounts_in_queries_never_fail_the_server(api, provider, amount) -> None:
    for url in ("/resource_providers", "/allocation_candidates"):
        resp = api.get(f"{url}?resources=VCPU:{amount}")
        assert resp.status in (200, 400), resp
        if resp.status == 200:
            assert not any(resp.json.values())


def test_limits_are_read_from_configuration(conf) -> None:
    bounds = limits.Limits.from_conf(conf)
    assert bounds == limits.Limits(body_bytes=1024 * 1024, query_bytes=8192,
                                   query_parameters=1000, json_depth=32,
                                   request_groups=128, any_of_members=256)


def test_options_appear_in_the_sample_configuration() -> None:
    from allotment import conf as conf_mod

    listed = {group: {opt.name for opt in opts} for group, opts in conf_mod.list_opts()}
    assert {"max_query_string_length", "max_query_parameters", "max_json_depth",
            "max_request_groups", "max_any_of_members", "client_timeout"} <= listed["allotment"]
    assert listed["oslo_middleware"] == {"max_request_body_size"}


def test_remembered_query_strings_are_judged_by_each_set_of_limits() -> None:
    from allotment import errors
    from allotment.api import query

    loose = limits.Limits(body_bytes=1024, query_bytes=1024, query_parameters=10,
                          json_depth=8, request_groups=8, any_of_members=8)
    tight = limits.Limits(body_bytes=1024, query_bytes=1024, query_parameters=2,
                          json_depth=8, request_groups=8, any_of_members=8)
    asked = "name=a&name=b&member_of=x"
    for _ in range(2):
        assert query._pairs(asked, loose) == (("name", "a"), ("name", "b"),
                                              ("member_of", "x"))
        with pytest.raises(errors.BadRequest, match="max_query_parameters"):
            query._pairs(asked, tight)  # refused every time, never remembered


def test_a_refused_query_is_refused_again(api, provider) -> None:
    for _ in range(2):
        assert_placement_error(api.get("/resource_providers?name=a%00b"), 400,
                               "Invalid query string")
        assert api.get("/resource_providers?name=ab").status == 200
