"""One kolla deployment per WSGI server, for the whole session
(tests/kolla/deployment.py); test_kolla_lane.py reaches Keystone through the
keystone tests' fixture."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.keystone.conftest import keystone  # noqa: F401
from tests.kolla import deployment, frontends, kolla

_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def kolla_mysql():
    """An administrator's URL of a private MariaDB: the suite's
    (ALLOTMENT_TEST_MYSQL_URL), else one started for the lane."""
    missing = frontends.missing_debian_packages()
    if missing:
        pytest.skip(f"Debian packages {', '.join(missing)} are not installed: "
                    "scripts/install-kolla-lane installs them (as root)")
    url = os.environ.get("ALLOTMENT_TEST_MYSQL_URL")
    if url:
        yield url
        return
    # Directly under /tmp: the server runs as mysql, which cannot enter
    # pytest's private directories.
    scratch = tempfile.mkdtemp(prefix="allotment-kolla-mysql.")
    script = str(_ROOT / "scripts" / "mysql-test-server")
    try:
        url = subprocess.run([script, "start", scratch], check=True, capture_output=True,
                             text=True).stdout.strip()
        yield url
    finally:
        subprocess.run([script, "stop", scratch], check=False)
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="session")
def kolla_deployments(kolla_mysql):
    """``get(kind, config="default", keystone_url=None)``: the deployment under
    ``kind``'s WSGI server with one of deployment.CONFIGS, made on first
    use."""
    made: dict[tuple[str, str], deployment.Deployment] = {}

    def get(kind: str, config: str = "default",
            keystone_url: str | None = None) -> deployment.Deployment:
        if kind == "apache" and not kolla.DEBIAN_PYTHON.exists():
            pytest.skip(f"{kolla.DEBIAN_PYTHON} is not installed: Debian's mod_wsgi embeds "
                        "another Python than the project's")
        if (kind, config) not in made:
            made[kind, config] = deployment.deploy(kind, kolla_mysql, config, keystone_url)
        return made[kind, config]

    yield get
    for found in made.values():
        found.stop(kolla_mysql)
