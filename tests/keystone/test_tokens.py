"""Real Keystone tokens through keystonemiddleware into allotment's policy."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from tests.keystone.conftest import app_for


def provider(client, token, name=None) -> str:
    rp = str(uuid.uuid4())
    resp = client.post("/resource_providers", token=token,
                       json={"name": name or f"rp-{rp}", "uuid": rp})
    assert resp.status == 200, resp
    return rp


def test_root_needs_no_token(legacy):
    assert legacy.get("/").status == 200


def test_project_admin_reads_and_writes(keystone, legacy):
    token = keystone.token("proj-admin")
    rp = provider(legacy, token)
    listed = legacy.get("/resource_providers", token=token)
    assert listed.status == 200
    assert rp in {p["uuid"] for p in listed.json["resource_providers"]}


@pytest.mark.parametrize("user", ["proj-member", "proj-reader"])
def test_project_member_and_reader_are_denied_admin_apis(keystone, legacy, user):
    resp = legacy.get("/resource_providers", token=keystone.token(user))
    assert resp.status == 403, resp
    assert ("Policy does not allow placement:resource_providers:list to be performed."
            in resp.error()["detail"])


def test_novas_service_user_claims(keystone, legacy):
    """What nova's scheduler and compute do, with nova's service user."""
    token = keystone.token("nova")
    rp = provider(legacy, token)
    inventory = legacy.put(f"/resource_providers/{rp}/inventories", token=token, json={
        "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    assert inventory.status == 200, inventory
    candidates = legacy.get("/allocation_candidates?resources=VCPU:2", token=token)
    assert candidates.status == 200
    assert rp in candidates.json["provider_summaries"]
    consumer = str(uuid.uuid4())
    claim = legacy.put(f"/allocations/{consumer}", token=token, json={
        "allocations": {rp: {"resources": {"VCPU": 2}}},
        "project_id": keystone.project("demo"), "user_id": str(uuid.uuid4()).replace("-", ""),
        "consumer_generation": None, "consumer_type": "INSTANCE"})
    assert claim.status == 204, claim


def test_new_defaults_project_reader_reads_its_own_projects_usages(keystone, secure):
    for user in ("proj-reader", "proj-member", "proj-admin"):
        token = keystone.token(user)
        own = secure.get(f"/usages?project_id={keystone.project('demo')}", token=token)
        assert own.status == 200, (user, own)
    reader = keystone.token("proj-reader")
    other = secure.get(f"/usages?project_id={keystone.project('other')}", token=reader)
    assert other.status == 403
    assert secure.get("/resource_providers", token=reader).status == 403
    assert secure.get("/resource_providers", token=keystone.token("proj-admin")).status == 200
    assert secure.get("/resource_providers", token=keystone.token("nova")).status == 200


@pytest.mark.parametrize("user", ["sys-admin", "sys-reader"])
def test_new_defaults_system_scoped_tokens_have_the_wrong_scope(keystone, secure, user):
    # Placement's rules are project-scoped: a system-scoped token, even an
    # administrator's, is refused once scope is enforced.
    token, body = keystone.authenticate(user)
    assert body["system"] == {"all": True}
    resp = secure.get("/resource_providers", token=token)
    assert resp.status == 403, resp


def test_an_expired_token_is_401(keystone, legacy):
    token, expires_at = keystone.short_lived_token("proj-admin", 10)
    expiry = datetime.datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    # The token's own expiry is the credential's, not Keystone's hour.
    assert expiry < datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=90)
    time.sleep(max(0.0, (expiry - datetime.datetime.now(datetime.UTC)).total_seconds()) + 1)
    resp = legacy.get("/resource_providers", token=token)
    assert resp.status == 401, (expires_at, resp)
    assert resp.headers["WWW-Authenticate"].startswith("Keystone uri=")


def test_a_revoked_token_is_401(keystone, legacy):
    token = keystone.fresh_token("proj-admin")
    keystone.revoke(token)
    assert legacy.get("/resource_providers", token=token).status == 401


def test_a_made_up_token_is_401(legacy):
    resp = legacy.get("/resource_providers", token="gAAAAABnot-a-token")
    assert resp.status == 401
    # keystonemiddleware's own answer, as upstream Placement gives it.
    assert resp.json["error"]["title"] == "Unauthorized"
    assert resp.headers["WWW-Authenticate"].startswith("Keystone uri=")


def test_keystone_stopped_is_503_never_500(keystone, tmp_path):
    # Keystone stopped: nothing listens where [keystone_authtoken] points.
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{sock.getsockname()[1]}"
    client = app_for(tmp_path, gone)
    assert client.get("/").status == 200
    token = keystone.token("proj-admin")
    resp = client.get("/resource_providers", token=token)
    assert resp.status == 503, resp
