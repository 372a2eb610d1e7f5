"""Errors: shape, codes by microversion, routing failures, bodies, accept."""

from __future__ import annotations

import pytest


def test_unknown_url_is_404_in_placement_shape(api):
    resp = api.get("/no/such/thing")
    assert resp.status == 404
    error = resp.error()
    assert error["status"] == 404
    assert error["title"] == "Not Found"
    assert error["detail"].startswith("The resource could not be found.")
    assert error["code"] == "placement.undefined_code"
    assert resp.headers["content-type"] == "application/json"


def test_trailing_slash_is_not_the_collection(api):
    assert api.get("/resource_classes/").status == 404


def test_error_code_only_from_1_23(api):
    assert "code" not in api.get("/nowhere", version="1.22").error()
    assert api.get("/nowhere", version="1.23").error()["code"] == "placement.undefined_code"


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("POST", "/", "GET"),
    ("DELETE", "/resource_classes", "GET, POST"),
    ("POST", "/resource_classes/CUSTOM_A", "GET, PUT, DELETE"),
    ("PATCH", "/traits", "GET"),
    ("HEAD", "/traits", "GET"),
    ("OPTIONS", "/traits/CUSTOM_A", "GET, PUT, DELETE"),
])
def test_wrong_method_is_405_with_allow(api, method, path, allow):
    resp = api.request(method, path)
    assert resp.status == 405
    assert sorted(resp.headers["allow"].split(", ")) == sorted(allow.split(", "))
    if method != "HEAD":
        assert resp.error()["title"] == "Method Not Allowed"


def test_body_without_content_type_is_400(api):
    resp = api.post("/resource_classes", body=b'{"name": "CUSTOM_A"}')
    assert resp.status == 400
    assert "content-type header required" in resp.error()["detail"]


def test_non_json_body_is_415(api):
    resp = api.post("/resource_classes", body="name=CUSTOM_A",
                    content_type="application/x-www-form-urlencoded")
    assert resp.status == 415
    error = resp.error()
    assert error["title"] == "Unsupported Media Type"
    assert "The media type application/x-www-form-urlencoded is not supported, " \
        "use application/json" in error["detail"]


def test_missing_body_is_415(api):
    resp = api.post("/resource_classes")
    assert resp.status == 415
    assert "The media type None is not supported" in resp.error()["detail"]


@pytest.mark.parametrize("raw", [b"{", b"[1,", b"\xff\xfe", b"not json"])
def test_malformed_json_is_400(api, raw):
    resp = api.post("/resource_classes", body=raw, content_type="application/json")
    assert resp.status == 400
    assert "Malformed JSON" in resp.error()["detail"]


def test_schema_violation_is_400_with_reason(api):
    resp = api.post("/resource_classes", json={"name": "CUSTOM_A", "extra": 1})
    assert resp.status == 400
    detail = resp.error()["detail"]
    assert "JSON does not validate" in detail
    assert "Additional properties are not allowed" in detail


def test_accept_without_json_is_406(api):
    resp = api.get("/resource_classes", headers={"Accept": "text/html"})
    assert resp.status == 406
    assert resp.headers["content-type"] == "text/html; charset=UTF-8"
    assert "Only application/json is provided" in resp.text


@pytest.mark.parametrize("accept", ["application/json", "*/*", "application/*",
                                    "text/html, application/json;q=0.5"])
def test_accept_allowing_json_is_fine(api, accept):
    assert api.get("/resource_classes", headers={"Accept": accept}).status == 200


def test_missing_token_is_401(app):
    from tests.harness.wsgi_client import Client

    resp = Client(app, token=None).get("/resource_classes")
    assert resp.status == 401
    assert resp.error()["title"] == "Unauthorized"


def test_policy_denial_is_403_in_placement_shape(app):
    from tests.harness.wsgi_client import Client

    resp = Client(app, token="someuser:someproject").post(
        "/resource_classes", json={"name": "CUSTOM_NOPE"})
    assert resp.status == 403
    error = resp.error()
    assert error["title"] == "Forbidden"
    assert "placement:resource_classes:create" in error["detail"]
    assert error["code"] == "placement.undefined_code"
    # And nothing was written.
    assert Client(app).get("/resource_classes/CUSTOM_NOPE").status == 404


def test_multi_line_detail_is_flattened_to_one_line(api):
    resp = api.post("/resource_classes", json={"name": "NOT_CUSTOM"})
    assert resp.status == 400
    detail = resp.error()["detail"]
    explanation, _, reason = detail.partition("\n\n ")
    assert explanation.startswith("The server could not comply")
    # jsonschema's report spans several lines; the detail keeps it on one.
    assert "\n" not in reason
    assert "Failed validating 'pattern' in schema['properties']['name']:     {" in reason


def test_policy_denial_and_scope_mismatch_are_worded_apart(app):
    from tests.harness.wsgi_client import Client

    # A project member refused by the rules: the sentence naming the action.
    member = Client(app, token="user").get(
        "/resource_classes", headers={"X-Roles": "member", "X-Project-Id": "p1"})
    assert member.status == 403
    assert member.error()["detail"] == (
        "Access was denied to this resource.\n\n Policy does not allow "
        "placement:resource_classes:list to be performed.  ")
    # A system-scoped token on a project-scoped rule: just the action name.
    system = Client(app, token="user").get(
        "/resource_classes",
        headers={"X-Roles": "admin", "OpenStack-System-Scope": "all"})
    assert system.status == 403
    assert system.error()["detail"] == (
        "Access was denied to this resource.\n\n placement:resource_classes:list  ")


def test_method_too_new_for_the_version_is_405_without_detail(api):
    uuid = api.post("/resource_providers", json={"name": "rp"}).json["uuid"]
    resp = api.delete(f"/resource_providers/{uuid}/inventories", version="1.4")
    assert resp.status == 405
    assert resp.error()["detail"] == (
        "The method DELETE is not allowed for this resource. \n\n ")


def _call_raw(app, path_info: str, token: str = "admin"):
    """Call the app with an environ built by hand, as a server would."""
    import io
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"] = int(status.split()[0])
        captured["headers"] = {k.lower(): v for k, v in headers}

    environ = {
        "REQUEST_METHOD": "GET", "SCRIPT_NAME": "", "PATH_INFO": path_info,
        "QUERY_STRING": "", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""), "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0), "wsgi.multithread": False,
        "wsgi.multiprocess": False, "wsgi.run_once": False,
        "HTTP_X_AUTH_TOKEN": token,
    }
    body = b"".join(app(environ, start_response))
    return captured["status"], captured["headers"], body


def test_path_decoded_as_utf8_by_the_server_still_routes(app, api):
    # A server that hands over PATH_INFO already decoded from UTF-8 (rather
    # than as latin-1 bytes) must get the same answers as a conforming one.
    status, headers, _ = _call_raw(app, "/no_such_collection/\u2603")
    assert status == 404
    assert headers["content-type"] == "application/json"

    created = api.post("/resource_providers", json={"name": "\u2603 host"})
    assert created.status == 200
    uuid = created.json["uuid"]
    status, _, body = _call_raw(app, f"/resource_providers/{uuid}")
    assert status == 200 and b"host" in body
