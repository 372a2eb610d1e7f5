"""Random malformed requests to every route never get a 5xx.

Each example picks a route and a method (allowed or not), fills the path
with a real id or junk, and sends a query string, headers and a body drawn
from hostile material: random bytes percent-encoded or raw, NUL, invalid
UTF-8, huge numbers, deep nesting, wrong types.  Every answer must be below
500, and every error must be in Placement's shape with its own status.
Runs on every backend.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote_from_bytes, unquote_to_bytes

import pytest
import webob
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allotment.runtime import Runtime
from allotment.server.app import routes
from tests.api.test_resource_providers import create

RP = "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
CONSUMER = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
RESOURCES = dict(routes(Runtime(conf=None, db=None), api=None))
TEMPLATES = list(RESOURCES)

PATH_VALUES = {
    "uuid": [RP, "not-a-uuid", "%00", "%FF%FE", RP.upper(), "x" * 300, "%C3%28"],
    "consumer_uuid": [CONSUMER, "junk", "%00", "%ED%A0%80"],
    "name": ["CUSTOM_A", "VCPU", "HW_CPU_X86_AVX2", "CUSTOM_%00", "custom_a", "%FF",
             "CUSTOM_" + "A" * 300],
    "resource_class": ["VCPU", "CUSTOM_A", "%00", "NOPE", "%E2%98%83"],
}
KEYS = ["resources", "required", "member_of", "in_tree", "name", "uuid", "limit",
        "group_policy", "project_id", "user_id", "consumer_type", "root_required",
        "same_subtree", "associated", "resources1", "required_a", "member_of2", "x",
        # GET /allocation_candidates's extensions (with Allotment-Extensions: 1)
        "explain", "explain_limit", "headroom", "can_split", "isolate", "root_member_of",
        "ignore_consumers", "preempt"]
NUMBERS = ["0", "-1", "1", "2147483648", "9223372036854775808", "1" + "0" * 400,
           "1e400", "NaN", "1.5"]

raw_text = st.one_of(
    st.binary(max_size=30).map(lambda b: quote_from_bytes(b, safe="")),
    st.text(max_size=30).map(lambda t: quote_from_bytes(t.encode("utf-8", "surrogatepass"),
                                                        safe=",:!")),
    st.sampled_from(["VCPU:1", "VCPU:1,MEMORY_MB:%s", "in:CUSTOM_A,CUSTOM_B", "!CUSTOM_A",
                     "in:" + ",".join(["CUSTOM_X"] * 300), RP, f"in:{RP},{RP}", "!in:x",
                     "none", "isolate", "%00", "%FF", "true", "", "VCPU:%s"]),
)
values = st.one_of(raw_text, st.sampled_from(NUMBERS),
                   st.tuples(st.sampled_from(["VCPU:%s", "VCPU:1,MEMORY_MB:%s"]),
                             st.sampled_from(NUMBERS)).map(lambda p: p[0] % p[1]))
queries = st.lists(st.tuples(st.one_of(st.sampled_from(KEYS), raw_text), values),
                   max_size=6).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 80), max_value=2 ** 80),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
    st.sampled_from([RP, CONSUMER, "VCPU", "CUSTOM_A", "\x00", "\ud800", 2 ** 63]))
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(
            ["name", "uuid", "inventories", "allocations", "resources", "total",
             "resource_provider_generation", "consumer_generation", "project_id",
             "user_id", "traits", "aggregates", RP, CONSUMER, "VCPU"]),
            st.text(max_size=8)), children, max_size=5)),
    max_leaves=15)


# Around the depth limit, and where Python's own recursion limit bites.
DEPTHS = st.sampled_from([2, 31, 32, 33, 200, 500, 900, 990, 1100, 3000])


def _encode(document) -> bytes:
    return json.dumps(document, allow_nan=False).encode("utf-8", "surrogatepass")


bodies = st.one_of(
    st.none(),
    st.binary(max_size=200),
    documents.map(_encode),
    DEPTHS.map(lambda n: b"[" * n + b"]" * n),
    st.tuples(st.sampled_from(["name", "inventories", "allocations", RP, "traits"]),
              DEPTHS).map(
        lambda p: b'{"%s": ' % p[0].encode() + b'{"a": ' * p[1] + b"1" + b"}" * (p[1] + 1)),
    st.sampled_from([b'{"name": "a\xff"}', b'{"total": 1' + b"0" * 5000 + b"}",
                     b'{"a": 1e999}', b"\x00", b'{"name": "x"}\x00', b"NaN"]),
)
headers = st.fixed_dictionaries({}, optional={
    "OpenStack-API-Version": st.sampled_from(
        ["placement latest", "placement 1.0", "placement 1.39", "placement 1.40",
         "placement 2.0", "placement 1.x", "compute 1.1", "placement ", "placement 1.5"]),
    "Content-Type": st.sampled_from(
        ["application/json", "text/plain", "application/json; charset=latin-1",
         "application/x-www-form-urlencoded", ""]),
    "Accept": st.sampled_from(["application/json", "text/html", "*/*", "junk"]),
    "Allotment-Extensions": st.sampled_from(["1", " 1 ", "2", ""]),
})


@st.composite
def hostile_requests(draw, template: str):
    path = template
    for name, choices in PATH_VALUES.items():
        if "{" + name + "}" in path:
            # The real id half the time, so requests reach the deeper code.
            value = draw(st.one_of(st.just(choices[0]), st.sampled_from(choices)))
            path = path.replace("{" + name + "}", value)
    # Mostly the methods the route has, sometimes any.
    resource = RESOURCES[template]
    method = draw(st.one_of(
        st.sampled_from([m for m in ("GET", "PUT", "POST", "DELETE")
                         if hasattr(resource, f"on_{m.lower()}")]),
        st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"])))
    # Each part clean half the time: one hostile part at a time reaches
    # further than several at once.
    return (method, path, draw(st.one_of(st.just(""), queries)),
            draw(st.one_of(st.just({}), headers)), draw(st.one_of(st.none(), bodies)))


@pytest.fixture
def world(api) -> str:
    # The real ids the fuzzer uses name a real provider with inventory, in
    # a tree (searched as nested trees are), with a capacity past 64 bits.
    create(api, "fuzz", uuid=RP)
    wide = 2147483647
    assert api.put(f"/resource_providers/{RP}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {
            "total": wide, "max_unit": wide, "allocation_ratio": 3.4e38}}}).status == 200
    child = create(api, "fuzz-child", parent=RP)
    assert api.put(f"/resource_providers/{child}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}}}).status == 200
    return RP


# Examples per route; ALLOTMENT_FUZZ_EXAMPLES=1000 for a long run
# (docs/limits.md).
EXAMPLES = int(os.environ.get("ALLOTMENT_FUZZ_EXAMPLES", "60"))


def _paths(template: str) -> list[str]:
    paths = [template]
    for name, choices in PATH_VALUES.items():
        paths = [p.replace("{" + name + "}", value) if "{" + name + "}" in p else p
                 for p in paths for value in choices]
    return sorted(set(paths))


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_path_value_with_every_method(app, world, template) -> None:
    # Exhaustive over the hostile path values, which are few; the body is a
    # valid-looking JSON object so that writes get as far as they can.
    for path in _paths(template):
        for method in ("GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"):
            body = b'{"name": "x", "resource_provider_generation": 1}'
            send(app, (method, path, "", {}, body if method in ("PUT", "POST") else None))


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_hostile_request_gets_a_5xx(app, world, template) -> None:
    # One run per route, so that every route gets its share of examples.
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(request=hostile_requests(template))
    def run(request) -> None:
        send(app, request)

    run()


def send(app, request) -> None:
    method, path, query, extra_headers, body = request
    req = webob.Request.blank("/", method=method)
    # As a PEP 3333 server hands it over: decoded bytes, as latin-1 text.
    req.environ["PATH_INFO"] = unquote_to_bytes(path).decode("latin-1")
    req.environ["QUERY_STRING"] = query
    req.headers["X-Auth-Token"] = "admin"
    # Well-formed framing by default, so that most bodies reach a handler.
    req.headers["OpenStack-API-Version"] = "placement latest"
    if body is not None:
        req.headers["Content-Type"] = "application/json"
    for name, value in extra_headers.items():
        req.headers[name] = value
    if body is not None:
        req.body = body
    resp = req.get_response(app)
    assert resp.status_code < 500, (method, path, query, extra_headers, body[:200]
                                    if body else body, resp.text[:500])
    if resp.status_code >= 400:
        if resp.content_type == "text/html" and req.environ["PATH_INFO"].startswith("/ui"):
            return  # the web view answers browsers with pages, errors included
        if resp.content_type == "text/html":  # asked for by the Accept header
            assert f"<title>{resp.status_code} " in resp.text, resp.text[:500]
            return
        if resp.content_type == "text/plain":
            assert resp.text.startswith(f"{resp.status_code} "), resp.text[:500]
            return
        document = json.loads(resp.text)
        assert [e["status"] for e in document["errors"]] == [resp.status_code]

