"""osc-placement's own functional tests against allotment deployed by kolla
under uWSGI, behind haproxy and TLS, with real Keystone tokens.

The deployment is kolla's placement.conf as it renders it
(``[keystone_authtoken]`` naming the lane's Keystone,
scripts/keystone-test-server); Keystone's catalog has the haproxy https
URL as Placement's endpoints (region :data:`tests.kolla.osc.REGION`); the
tests, loaded from the installed osc-placement (tests/kolla/osc.py), run
every ``openstack`` command with an operator's ``OS_*`` variables: the
password of Keystone's bootstrap administrator, that region, and the
throw-away CA in ``OS_CACERT`` (tests/kolla/osc_functional.py).  Each
module of theirs is one test here; every test of the module must pass
but those in :data:`SKIPPED`.
"""

from __future__ import annotations

import pytest
import requests

from tests.kolla import osc

# Runs on a test worker of its own: its deployment is not the gabbi files'.
pytestmark = pytest.mark.xdist_group("kolla-osc")

# osc-placement test id -> why it cannot pass here.
SKIPPED: dict[str, str] = {}


@pytest.fixture(scope="module")
def functional_results(kolla_deployments, keystone, tmp_path_factory):
    found = kolla_deployments("uwsgi", "keystone", keystone.url)
    # Nothing is served without a Keystone token: the commands' tokens are
    # what lets them in.
    refused = requests.get(found.public_url + "/resource_providers",
                           verify=str(found.ca_file), timeout=60)
    assert refused.status_code == 401, refused.text
    admin = keystone.accounts["users"]["admin"]
    osc.register_endpoints(keystone.url, keystone.token("admin", {"system": {"all": True}}),
                           found.public_url)
    venv = osc.ensure_venv()
    env = osc.client_env(keystone.url, "admin", admin["password"], "admin", found.ca_file,
                         venv)
    results, output = osc.run(venv, env, SKIPPED, tmp_path_factory.mktemp("osc"))
    return results, output


def _params():
    found = osc.modules()
    if not found:
        return [pytest.param("", marks=pytest.mark.skip(
            reason="osc-placement's venv is not built: scripts/install-kolla-lane builds it"))]
    return found


@pytest.mark.parametrize("module", _params())
def test_osc_placement_functional_module(functional_results, module):
    results, output = functional_results
    prefix = f"osc_placement.tests.functional.{module}."
    mine = {name: outcome for name, outcome in results.items() if name.startswith(prefix)}
    assert mine, f"no test of {module} ran:\n{output[-4000:]}"
    failed = {name: detail for name, (kind, detail) in mine.items()
              if kind not in ("pass", "skip")}
    skipped = {name for name, (kind, _) in mine.items() if kind == "skip"}
    assert not failed, "\n\n".join(f"{name}:\n{detail}" for name, detail in failed.items())
    assert skipped == {name for name in SKIPPED if name.startswith(prefix)}
