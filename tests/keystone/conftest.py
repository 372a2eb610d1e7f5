"""A real Keystone (scripts/keystone-test-server, started by scripts/test,
which names its directory in ALLOTMENT_TEST_KEYSTONE_DIR) and allotment
behind keystonemiddleware as kolla-ansible configures it."""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import pytest
import requests

from allotment import conf as conf_mod
from allotment.server.app import create_app
from tests.harness.wsgi_client import Client

# [keystone_authtoken] as kolla-ansible's placement.conf.j2 renders it
# (memcached left out: each test process caches tokens itself).
AUTHTOKEN = """\
[api]
auth_strategy = keystone

[keystone_authtoken]
service_type = placement
www_authenticate_uri = {url}
auth_url = {url}
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = {password}
region_name = RegionOne
cafile =
"""


class Keystone:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.accounts = json.loads((directory / "accounts.json").read_text())
        self.url = self.accounts["url"]
        self._tokens: dict[tuple[str, str], str] = {}

    def project(self, name: str) -> str:
        return self.accounts["projects"][name]

    def authenticate(self, user: str, scope: dict | None = None) -> tuple[str, dict]:
        """A token of ``user`` (scoped to the user's project unless
        ``scope`` says otherwise) and its body."""
        account = self.accounts["users"][user]
        if scope is None:
            scope = ({"system": {"all": True}} if account["project"] == "system"
                     else {"project": {"id": self.project(account["project"])}})
        return self._issue({"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": account["password"]}}},
            "scope": scope})

    def token(self, user: str, scope: dict | None = None) -> str:
        """A token of ``user``, issued once per scope for the session
        (Keystone's tokens live an hour)."""
        key = (user, json.dumps(scope, sort_keys=True))
        if key not in self._tokens:
            self._tokens[key] = self.authenticate(user, scope)[0]
        return self._tokens[key]

    def fresh_token(self, user: str) -> str:
        return self.authenticate(user)[0]

    def _issue(self, auth: dict) -> tuple[str, dict]:
        resp = requests.post(self.url + "/v3/auth/tokens", json={"auth": auth}, timeout=60)
        assert resp.status_code == 201, resp.text
        return resp.headers["X-Subject-Token"], resp.json()["token"]

    def short_lived_token(self, user: str, seconds: int) -> tuple[str, str]:
        """A token expiring in about ``seconds``: Keystone caps a token made
        from an application credential at the credential's expiry.  Returns
        the token and its expiry as Keystone states it.  On a machine slow
        enough that the credential expired before its token was issued,
        asks again with twice the time."""
        owner = self.token(user)
        uid = self.accounts["users"][user]["id"]
        for attempt in range(4):
            expires = (datetime.datetime.now(datetime.UTC)
                       + datetime.timedelta(seconds=seconds * 2 ** attempt))
            resp = requests.post(
                f"{self.url}/v3/users/{uid}/application_credentials",
                headers={"X-Auth-Token": owner}, timeout=60,
                json={"application_credential": {
                    "name": f"short-{time.monotonic_ns()}",
                    # The roles assigned, named: left out, Keystone takes
                    # every role of the owner's token, implied ones too, and
                    # now and then fails to find an implied one among the
                    # user's assignments (a 400).
                    "roles": [{"name": r} for r in self.accounts["users"][user]["roles"]],
                    "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S")}})
            assert resp.status_code == 201, resp.text
            cred = resp.json()["application_credential"]
            issued = requests.post(self.url + "/v3/auth/tokens", timeout=60, json={"auth": {
                "identity": {"methods": ["application_credential"], "application_credential": {
                    "id": cred["id"], "secret": cred["secret"]}}}})
            if issued.status_code == 201:
                return issued.headers["X-Subject-Token"], issued.json()["token"]["expires_at"]
            assert issued.status_code == 401, issued.text
        raise AssertionError("Keystone issued no token from a fresh application credential")

    def revoke(self, token: str) -> None:
        resp = requests.delete(self.url + "/v3/auth/tokens", timeout=60, headers={
            "X-Auth-Token": self.token("admin", {"system": {"all": True}}),
            "X-Subject-Token": token})
        assert resp.status_code == 204, resp.text


@pytest.fixture(scope="session")
def keystone() -> Keystone:
    directory = os.environ.get("ALLOTMENT_TEST_KEYSTONE_DIR")
    if not directory:
        pytest.skip("no Keystone: scripts/test starts one (scripts/keystone-test-server)")
    return Keystone(Path(directory))


def placement_conf(tmp: Path, keystone_url: str, extra: str = "") -> Path:
    path = tmp / "placement.conf"
    path.write_text(AUTHTOKEN.format(url=keystone_url, password="secret")
                    + f"\n[placement_database]\nconnection = sqlite:///{tmp / 'p.sqlite'}\n"
                    + extra)
    return path


def app_for(tmp: Path, keystone_url: str, extra: str = "") -> Client:
    conf = conf_mod.load(config_files=[str(placement_conf(tmp, keystone_url, extra))])
    return Client(create_app(conf), token=None)


@pytest.fixture(scope="module")
def legacy(keystone, tmp_path_factory) -> Client:
    """allotment with upstream's default policy settings."""
    return app_for(tmp_path_factory.mktemp("legacy"), keystone.url)


@pytest.fixture(scope="module")
def secure(keystone, tmp_path_factory) -> Client:
    """allotment with the new defaults and scope enforced."""
    return app_for(tmp_path_factory.mktemp("secure"), keystone.url,
                   "[oslo_policy]\nenforce_new_defaults = true\nenforce_scope = true\n")
