"""Authentication middleware (noauth2, keystone) and the request context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import webob
from oslo_middleware import request_id

from allotment import auth, errors
from allotment import conf as allotment_conf
from allotment.auth import authenticate as middleware
from allotment.auth import keystone, policies
from allotment.auth.policy import Policy
from allotment.context import RequestContext
from tests.harness.keystone import FakeKeystone

REQUEST_ID = "req-6c0b1d7e-0d5c-4d89-9f4e-3a3b0d1f2c11"
KEYSTONE_URI = "http://keystone.test:5000/identity"


class Recorder:
    """A trivial WSGI app that remembers what it was handed."""

    def __init__(self) -> None:
        self.environ: dict | None = None

    def __call__(self, environ, start_response):
        self.environ = environ
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    @property
    def ctx(self) -> RequestContext:
        assert self.environ is not None, "the app was not reached"
        return self.environ[middleware.CONTEXT_KEY]


def call(app, path: str = "/resource_providers", headers: dict | None = None,
         method: str = "GET") -> webob.Response:
    req = webob.Request.blank("/", method=method, headers=headers or {})
    # Set PATH_INFO directly: blank() cannot express an empty path.
    req.environ["PATH_INFO"] = path
    req.environ[request_id.ENV_REQUEST_ID] = REQUEST_ID
    return req.get_response(app)


def build(strategy: str, tmp_path: Path, extra_conf: str = ""):
    config_file = tmp_path / "placement.conf"
    config_file.write_text(
        f"[api]\nauth_strategy = {strategy}\n"
        f"[oslo_policy]\npolicy_file = {tmp_path / 'absent.yaml'}\n"
        f"{extra_conf}")
    conf = allotment_conf.load(config_files=[str(config_file)])
    policy = Policy(conf)
    recorder = Recorder()
    return auth.wrap(recorder, conf, policy), recorder, policy


@pytest.fixture
def noauth(tmp_path):
    return build("noauth2", tmp_path)


def assert_placement_401(resp: webob.Response, detail: str | None = None) -> None:
    assert resp.status_int == 401
    assert resp.content_type == "application/json"
    body = json.loads(resp.body)
    assert list(body) == ["errors"] and len(body["errors"]) == 1
    error = body["errors"][0]
    assert error["status"] == 401
    assert error["title"] == "Unauthorized"
    assert error["request_id"] == REQUEST_ID
    assert error["detail"].startswith(errors.Unauthorized.explanation + "\n\n ")
    if detail is not None:
        assert error["detail"] == errors.Unauthorized(detail).format_detail()


# --- noauth2 -------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", ""])
def test_noauth_root_needs_no_token(noauth, path) -> None:
    app, recorder, _ = noauth
    resp = call(app, path)
    assert resp.status_int == 200
    assert recorder.ctx.user_id is None


def test_noauth_root_ignores_a_token(noauth) -> None:
    # As in Placement, the root document bypasses the fake auth entirely.
    app, recorder, _ = noauth
    assert call(app, "/", {"X-Auth-Token": "admin:admin"}).status_int == 200
    assert recorder.ctx.user_id is None


@pytest.mark.parametrize("path", ["/resource_providers", "/traits/CUSTOM_X", "/x/"])
def test_noauth_missing_token_is_401(noauth, path) -> None:
    app, recorder, _ = noauth
    resp = call(app, path)
    assert_placement_401(resp, "No X-Auth-Token header was supplied.")
    assert recorder.environ is None


@pytest.mark.parametrize(("token", "user_id", "project_id"), [
    ("alice:proj-1", "alice", "proj-1"),
    ("alice", "alice", "alice"),
    ("alice:", "alice", "alice"),
    ("alice:proj:extra", "alice", "proj:extra"),
])
def test_noauth_token_names_user_and_project(noauth, token, user_id, project_id) -> None:
    app, recorder, _ = noauth
    assert call(app, headers={"X-Auth-Token": token}).status_int == 200
    ctx = recorder.ctx
    assert (ctx.user_id, ctx.project_id, ctx.roles) == (user_id, project_id, [])
    assert ctx.system_scope is None


@pytest.mark.parametrize(("token", "roles_header", "roles"), [
    ("admin", None, ["admin"]),
    ("admin:proj", None, ["admin"]),
    ("admin", "reader", ["reader"]),
    ("admin", "", []),
    ("alice", "admin,member, reader", ["admin", "member", "reader"]),
    ("alice", "service", ["service"]),
])
def test_noauth_roles(noauth, token, roles_header, roles) -> None:
    app, recorder, _ = noauth
    headers = {"X-Auth-Token": token}
    if roles_header is not None:
        headers["X-Roles"] = roles_header
    assert call(app, headers=headers).status_int == 200
    assert recorder.ctx.roles == roles


def test_noauth_system_scope_sets_no_project(noauth) -> None:
    app, recorder, _ = noauth
    resp = call(app, headers={"X-Auth-Token": "admin:proj",
                              "OpenStack-System-Scope": "all"})
    assert resp.status_int == 200
    ctx = recorder.ctx
    assert ctx.project_id is None
    assert ctx.system_scope == "all"
    assert ctx.roles == ["admin"]


def test_noauth_empty_system_scope_is_project_scoped(noauth) -> None:
    app, recorder, _ = noauth
    call(app, headers={"X-Auth-Token": "bob:proj", "OpenStack-System-Scope": ""})
    assert recorder.ctx.project_id == "proj"


def test_noauth_client_project_header_wins_user_header_does_not(noauth) -> None:
    # Placement's own RBAC tests send "x-auth-token: user" with an explicit
    # X-Project-Id; the token always names the user.
    app, recorder, _ = noauth
    call(app, headers={"X-Auth-Token": "user", "X-Project-Id": "proj-9",
                       "X-User-Id": "mallory"})
    assert recorder.ctx.project_id == "proj-9"
    assert recorder.ctx.user_id == "user"


def test_context_carries_request_id_and_policy(noauth) -> None:
    app, recorder, policy = noauth
    call(app, headers={"X-Auth-Token": "admin"})
    ctx = recorder.ctx
    assert isinstance(ctx, RequestContext)
    assert ctx.request_id == REQUEST_ID
    assert ctx.policy is policy


def test_context_generates_request_id_when_none_is_set(noauth) -> None:
    app, recorder, _ = noauth
    req = webob.Request.blank("/traits", headers={"X-Auth-Token": "admin"})
    assert req.get_response(app).status_int == 200
    assert recorder.ctx.request_id.startswith("req-")


def test_context_from_noauth_is_judged_by_policy(noauth) -> None:
    app, recorder, _ = noauth
    call(app, headers={"X-Auth-Token": "admin"})
    assert recorder.ctx.can(policies.RESOURCE_PROVIDERS_LIST)
    call(app, headers={"X-Auth-Token": "alice:p", "X-Roles": "member,reader"})
    assert not recorder.ctx.can(policies.RESOURCE_PROVIDERS_LIST, fatal=False)
    assert recorder.ctx.can(policies.TOTAL_USAGES, {"project_id": "p"})
    call(app, headers={"X-Auth-Token": "admin", "OpenStack-System-Scope": "all"})
    with pytest.raises(errors.Forbidden):
        recorder.ctx.can(policies.RESOURCE_PROVIDERS_LIST)


# --- the context middleware on its own --------------------------------------

@pytest.mark.parametrize(("path", "status"), [("/", 200), ("", 200), ("/usages", 401)])
def test_context_middleware_requires_a_user_off_root(tmp_path, path, status) -> None:
    recorder = Recorder()
    app = middleware.ContextMiddleware(recorder, Policy(allotment_conf.load(config_files=[])))
    resp = call(app, path)
    assert resp.status_int == status
    if status == 401:
        assert_placement_401(resp, "The request carries no user identity.")
        assert recorder.environ is None


def test_401_without_request_id_omits_it(tmp_path) -> None:
    app, _, _ = build("noauth2", tmp_path)
    resp = webob.Request.blank("/traits").get_response(app)
    assert resp.status_int == 401
    assert "request_id" not in json.loads(resp.body)["errors"][0]


# --- keystone --------------------------------------------------------------

KEYSTONE_CONF = f"[keystone_authtoken]\nwww_authenticate_uri = {KEYSTONE_URI}\n"


def test_keystone_strategy_builds_auth_token_from_conf(tmp_path) -> None:
    config_file = tmp_path / "placement.conf"
    config_file.write_text("[api]\nauth_strategy = keystone\n" + KEYSTONE_CONF)
    conf = allotment_conf.load(config_files=[str(config_file)])
    app = auth.wrap(Recorder(), conf, Policy(conf))
    assert isinstance(app, keystone.KeystoneAuthMiddleware)
    # auth_token registered its options on this app's ConfigOpts and read
    # the [keystone_authtoken] section from its file.
    assert conf.keystone_authtoken.www_authenticate_uri == KEYSTONE_URI


@pytest.mark.parametrize("path", ["/", ""])
def test_keystone_root_needs_no_token(tmp_path, path) -> None:
    app, recorder, _ = build("keystone", tmp_path, KEYSTONE_CONF)
    assert call(app, path).status_int == 200
    assert recorder.ctx.user_id is None


def test_keystone_rejects_missing_token_with_configured_uri(tmp_path) -> None:
    app, recorder, _ = build("keystone", tmp_path, KEYSTONE_CONF)
    resp = call(app, "/resource_providers")
    assert resp.status_int == 401
    assert resp.headers["WWW-Authenticate"] == f'Keystone uri="{KEYSTONE_URI}"'
    assert recorder.environ is None


def test_keystone_delayed_decision_stops_at_context(tmp_path) -> None:
    app, recorder, _ = build(
        "keystone", tmp_path, KEYSTONE_CONF + "delay_auth_decision = true\n")
    resp = call(app, "/resource_providers")
    assert_placement_401(resp, "The request carries no user identity.")
    assert recorder.environ is None


@pytest.fixture
def keystone_tokens(monkeypatch):
    return FakeKeystone().install(monkeypatch)


def test_keystone_valid_token_becomes_context(tmp_path, keystone_tokens) -> None:
    token = keystone_tokens.add("u-1", "p-1", ["admin", "member", "reader"])
    app, recorder, policy = build("keystone", tmp_path, KEYSTONE_CONF)
    resp = call(app, "/resource_providers", {"X-Auth-Token": token})
    assert resp.status_int == 200
    ctx = recorder.ctx
    assert (ctx.user_id, ctx.project_id) == ("u-1", "p-1")
    assert sorted(ctx.roles) == ["admin", "member", "reader"]
    assert ctx.policy is policy
    assert ctx.can(policies.RESOURCE_PROVIDERS_CREATE)


def test_keystone_ignores_forged_identity_headers(tmp_path, keystone_tokens) -> None:
    token = keystone_tokens.add("u-2", "p-2", ["reader"])
    app, recorder, _ = build("keystone", tmp_path, KEYSTONE_CONF)
    call(app, "/usages", {"X-Auth-Token": token, "X-Roles": "admin",
                          "X-User-Id": "mallory", "X-Project-Id": "p-9"})
    ctx = recorder.ctx
    assert (ctx.user_id, ctx.project_id, ctx.roles) == ("u-2", "p-2", ["reader"])
    assert not ctx.can(policies.RESOURCE_PROVIDERS_LIST, fatal=False)


def test_keystone_unknown_token_is_401(tmp_path, keystone_tokens) -> None:
    app, recorder, _ = build("keystone", tmp_path, KEYSTONE_CONF)
    resp = call(app, "/resource_providers", {"X-Auth-Token": "not-a-token"})
    assert resp.status_int == 401
    assert recorder.environ is None


def test_keystone_leaves_no_unset_headers_in_the_environ(tmp_path, keystone_tokens) -> None:
    # auth_token sets headers a token does not fill (system scope, domain)
    # to None; PEP 3333 allows only strings, and header parsers fail on None.
    token = keystone_tokens.add("u-3", "p-3", ["admin"])
    app, recorder, _ = build("keystone", tmp_path, KEYSTONE_CONF)
    assert call(app, "/resource_providers", {"X-Auth-Token": token}).status_int == 200
    unset = [key for key, value in recorder.environ.items() if value is None]
    assert unset == []
    assert recorder.ctx.system_scope is None
