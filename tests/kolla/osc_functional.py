"""osc-placement's functional tests against a deployed Placement, run by
the Python of the venv that holds osc-placement (never by the project's):

    <osc venv>/bin/python tests/kolla/osc_functional.py RESULTS.json [SKIP.json]

Their base class (``osc_placement.tests.functional.base``) starts upstream
Placement in-process for every test (``PlacementFixture`` of
``placement.tests.functional.fixtures.placement``, with noauth2 and an
empty in-memory database) and runs the ``openstack`` shell in-process with
``--os-endpoint <that server> --os-token admin --os-auth-type
admin_token``.  Here the two fixture modules it imports are ours, made
before the tests are loaded, so that every test:

* starts from an empty service, as upstream's fresh database is: whatever
  an earlier test left behind is deleted through the API;
* runs each command with the credentials of the ``OS_*`` environment
  instead of the fixture's endpoint and token: a Keystone password, the
  Placement endpoint found in Keystone's catalog, the CA of ``OS_CACERT``.

The shell authenticates once for all commands of the run: every command
reuses the first one's token and catalog, as openstacksdk does with its
``cache.auth`` (the keyring) for the same credentials.  Authenticating
again for each of the thousands of commands would measure Keystone, not
Placement: each new token costs Keystone a password check and costs
Placement's keystonemiddleware a validation.

Nothing else of the tests is changed; they are loaded from the installed
package.  RESULTS.json gets ``{test id: [outcome, detail]}``; SKIP.json,
if given, maps test ids to the reason they are skipped.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import types
import unittest
from pathlib import Path

import fixtures
from keystoneauth1 import loading, session
from openstack.config import cloud_region
from openstackclient import shell

# What the base class passes before every command, standing for upstream's
# in-process server; the shell below replaces it with the OS_* credentials.
ENDPOINT = "http://osc-functional.invalid"
TOKEN = "osc-functional-token"
FIXTURE_ARGS = ["--os-endpoint", ENDPOINT, "--os-token", TOKEN, "--os-auth-type", "admin_token"]


def keystone_session() -> tuple[session.Session, dict]:
    """A session with the OS_* password credentials (the ones the shell
    uses), and the catalog filter for Placement."""
    env = os.environ
    loader = loading.get_plugin_loader("password")
    auth = loader.load_from_options(
        auth_url=env["OS_AUTH_URL"], username=env["OS_USERNAME"],
        password=env["OS_PASSWORD"], project_name=env["OS_PROJECT_NAME"],
        user_domain_name=env["OS_USER_DOMAIN_NAME"],
        project_domain_name=env["OS_PROJECT_DOMAIN_NAME"])
    where = {"service_type": "placement", "interface": env["OS_INTERFACE"],
             "region_name": env["OS_REGION_NAME"]}
    return session.Session(auth=auth, verify=env["OS_CACERT"]), where


class Emptier:
    """Deletes, through Placement's API, everything a test can leave:
    allocations, resource providers (children first, with their
    inventories, traits and aggregates), custom resource classes and
    custom traits."""

    def __init__(self) -> None:
        self.session, self.where = keystone_session()

    def _call(self, method: str, path: str, version: str = "1.14") -> dict:
        resp = self.session.request(
            path, method, endpoint_filter=self.where, raise_exc=False,
            headers={"OpenStack-API-Version": f"placement {version}"})
        if resp.status_code >= 400 and resp.status_code != 404:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text}")
        return resp.json() if resp.content else {}

    def empty(self) -> None:
        providers = self._call("GET", "/resource_providers")["resource_providers"]
        for rp in providers:
            held = self._call("GET", f"/resource_providers/{rp['uuid']}/allocations")
            for consumer in held.get("allocations", {}):
                self._call("DELETE", f"/allocations/{consumer}")
        remaining = {rp["uuid"]: rp.get("parent_provider_uuid") for rp in providers}
        while remaining:
            parents = set(remaining.values())
            leaves = [u for u in remaining if u not in parents]
            for uuid in leaves:
                self._call("DELETE", f"/resource_providers/{uuid}")
                del remaining[uuid]
        for rc in self._call("GET", "/resource_classes", "1.2")["resource_classes"]:
            if rc["name"].startswith("CUSTOM_"):
                self._call("DELETE", f"/resource_classes/{rc['name']}", "1.2")
        traits = self._call("GET", "/traits?name=startswith:CUSTOM_", "1.6")["traits"]
        for trait in traits:
            self._call("DELETE", f"/traits/{trait}", "1.6")


class PlacementFixture(fixtures.Fixture):
    """Stands for upstream's in-process server: the deployed service,
    emptied."""

    endpoint = ENDPOINT
    token = TOKEN
    _emptier: Emptier | None = None

    def _setUp(self) -> None:
        if PlacementFixture._emptier is None:
            PlacementFixture._emptier = Emptier()
        PlacementFixture._emptier.empty()


class Logging(fixtures.Fixture):
    """Upstream's log capture: the tests' logs kept with the test (shown
    when it fails), not printed."""

    def _setUp(self) -> None:
        self.useFixture(fixtures.FakeLogger(level=logging.INFO))


def _install_fixture_modules() -> None:
    names = ["placement", "placement.tests", "placement.tests.functional",
             "placement.tests.functional.fixtures"]
    for name in names:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
    placement = types.ModuleType("placement.tests.functional.fixtures.placement")
    placement.PlacementFixture = PlacementFixture
    capture = types.ModuleType("placement.tests.functional.fixtures.capture")
    capture.Logging = Logging
    parent = sys.modules["placement.tests.functional.fixtures"]
    for module in (placement, capture):
        sys.modules[module.__name__] = module
        setattr(parent, module.__name__.rsplit(".", 1)[1], module)


_original_run = shell.OpenStackShell.run


def _run_with_keystone(self: shell.OpenStackShell, argv: list[str]) -> int:
    # The base class's fixture arguments come first; anything else means
    # osc-placement's base class changed, and this file must follow it.
    if argv[:len(FIXTURE_ARGS)] != FIXTURE_ARGS:
        raise AssertionError(f"unexpected arguments from the base class: {argv}")
    return _original_run(self, argv[len(FIXTURE_ARGS):])


_original_get_auth = cloud_region.CloudRegion.get_auth
_authenticated: dict[str, object] = {}


def _get_auth_once(self: cloud_region.CloudRegion):
    # Keyed as openstacksdk keys its auth cache: the plugin's cache id,
    # a hash of the credentials.
    auth = _original_get_auth(self)
    key = auth.get_cache_id() if auth is not None else None
    if key is None:
        return auth
    return _authenticated.setdefault(key, auth)


class _Result(unittest.TextTestResult):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, list[str]] = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[test.id()] = ["pass", ""]

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[test.id()] = ["fail", self.failures[-1][1]]

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[test.id()] = ["error", self.errors[-1][1]]

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[test.id()] = ["skip", reason]

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcomes[test.id()] = ["xfail", ""]

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcomes[test.id()] = ["unexpected success", ""]


def _tests(suite: unittest.TestSuite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests(item)
        else:
            yield item


def main() -> None:
    results = Path(sys.argv[1])
    skips = json.loads(Path(sys.argv[2]).read_text()) if len(sys.argv) > 2 else {}
    _install_fixture_modules()
    shell.OpenStackShell.run = _run_with_keystone
    cloud_region.CloudRegion.get_auth = _get_auth_once
    import osc_placement.tests.functional as package

    loader = unittest.TestLoader()
    suite = loader.discover(package.__path__[0], pattern="test_*.py",
                            top_level_dir=str(Path(package.__path__[0]).parents[2]))
    failed_imports = [t.id() for t in _tests(suite)
                      if t.id().startswith("unittest.loader._FailedTest")]
    if failed_imports:
        raise SystemExit(f"could not load: {failed_imports}")
    for test in _tests(suite):
        reason = skips.get(test.id())
        if reason:
            setattr(test, test._testMethodName, unittest.skip(reason)(lambda: None))
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1, resultclass=_Result)
    result = runner.run(suite)
    results.write_text(json.dumps(result.outcomes, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
