"""The placement-manage sequences deployment tools run, run as they run them,
on the rendered placement.conf of a kolla deployment (tests/kolla).

kolla: its placement-api image's extend_start.sh, read from the installed
kolla package and run with the variable its bootstrap and upgrade plays set
(KOLLA_BOOTSTRAP on deploy; KOLLA_UPGRADE before and KOLLA_OSM after the
new containers on upgrade).  openstack-ansible: the os_placement role's
commands, from tests/kolla/os_placement_sequence.yml.  Each exits 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.kolla import deployment as deployment_mod

pytestmark = pytest.mark.xdist_group("kolla")
HEAD = "a082b8bb98d0"


def _version(found) -> str:
    done = found.run_commands(["placement-manage", "db", "version"])
    assert done.returncode == 0, done.output
    return done.output.strip()


@pytest.mark.parametrize("kind", ("uwsgi", "apache"))
def test_kolla_bootstrap(kolla_deployments, kind):
    """kolla's bootstrap container (KOLLA_BOOTSTRAP: db sync, then online
    data migrations) on the empty database exits 0 and leaves the schema at
    upstream's head."""
    found = kolla_deployments(kind)
    assert found.bootstrap.returncode == 0, found.bootstrap.output
    assert _version(found) == HEAD


def test_kolla_upgrade(kolla_deployments):
    """kolla's upgrade play: KOLLA_UPGRADE (db sync) while the old service
    still serves, then KOLLA_OSM (online data migrations) after the new
    containers start: each exits 0, and the service keeps answering."""
    found = kolla_deployments("uwsgi")
    for which in ("KOLLA_UPGRADE", "KOLLA_OSM"):
        done = deployment_mod.kolla_start(found.venv, found.home, which)
        assert done.returncode == 0, f"{which}: {done.output}"
    assert _version(found) == HEAD


def test_kolla_sets_exactly_these_commands():
    """The script run above is kolla's own, naming the commands this lane
    expects (a kolla release that changed them would be noticed here)."""
    from tests.kolla import kolla

    text = kolla.kolla_file("placement", "placement-api", "extend_start.sh").read_text()
    for needed in ("KOLLA_BOOTSTRAP", "KOLLA_UPGRADE", "KOLLA_OSM",
                   "placement-manage db sync", "placement-manage db online_data_migrations"):
        assert needed in text


def test_openstack_ansible_sequence(kolla_deployments):
    """os_placement's commands, in its order, each exiting 0 (the role
    would also accept 2 from online_data_migrations; nothing is left to
    migrate here, so 0 is required)."""
    found = kolla_deployments("uwsgi")
    sequence = yaml.safe_load((Path(__file__).with_name("os_placement_sequence.yml"))
                              .read_text())
    assert [s["command"][1:] for s in sequence["steps"]] == \
        [["db", "sync"], ["db", "online_data_migrations"]]
    for step in sequence["steps"]:
        done = found.run_commands(step["command"])
        assert done.returncode == 0, f"{step['command']}: {done.output}"
    assert _version(found) == HEAD


@pytest.mark.parametrize("kind", ("uwsgi", "apache"))
def test_kolla_config_validation(kolla_deployments, kind):
    """kolla's validate-config play: oslo-config-validator with placement's
    generator file on the rendered placement.conf finds nothing to report
    (kolla treats exit status 1 as errors found)."""
    found = kolla_deployments(kind)
    generator = Path(__file__).resolve().parents[2] / "etc" / "placement" / \
        "config-generator.conf"
    done = found.run_commands(["oslo-config-validator", "--config-file", str(generator),
                               "--input-file", str(found.config_dir / "placement.conf")])
    assert done.returncode == 0, done.output
    assert "ERROR" not in done.output, done.output
