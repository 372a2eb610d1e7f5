"""osc-placement's functional tests, from the installed package, in a venv
of their own (tests/kolla/osc_functional.py runs them there).

Test-only, like kolla's venv (tests/kolla/kolla.py): python-openstackclient,
osc-placement and oslotest (what osc-placement's functional base class
imports) at pinned versions, installed from PyPI into the lane's cache
directory the first time they are asked for; a second run installs
nothing.  Nothing of them is copied into the repository.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import requests

from tests.kolla import kolla

# The same client versions as tests/keystone's (scripts/keystone-test-server).
PACKAGES = ("python-openstackclient==10.5.0", "osc-placement==4.9.1", "oslotest==6.1.1")
RUNNER = Path(__file__).resolve().parent / "osc_functional.py"
# The region of Keystone's catalog whose Placement endpoints are the
# deployment's haproxy URL (tests/keystone points RegionOne's elsewhere).
REGION = "kolla-haproxy"


def venv_path() -> Path:
    return kolla.cache_dir() / ("osc-functional-" + "-".join(
        p.split("==")[1] for p in PACKAGES))


def ensure_venv() -> Path:
    """The venv, built once (test workers wait on a lock)."""
    venv = venv_path()
    marker = venv / ".installed"
    if marker.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            subprocess.run([*pip, "--upgrade", "pip"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run([*pip, *PACKAGES], check=True)
            marker.write_text("\n".join(PACKAGES) + "\n")
    return venv


def functional_dir(venv: Path) -> Path:
    found = glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "osc_placement"
                          / "tests" / "functional"))
    assert found, f"no osc_placement/tests/functional in {venv}"
    return Path(found[0])


def modules() -> list[str]:
    """The functional test modules osc-placement ships (empty when the
    venv is not built yet: scripts/install-kolla-lane builds it)."""
    venv = venv_path()
    if not (venv / ".installed").exists():
        return []
    return sorted(p.stem for p in functional_dir(venv).glob("test_*.py"))


def register_endpoints(keystone_url: str, admin_token: str, url: str) -> None:
    """Keystone's placement service gets public, internal and admin
    endpoints at ``url`` in :data:`REGION` (made if missing), as
    kolla-ansible registers the haproxy URL for its region."""
    api = keystone_url + "/v3"
    headers = {"X-Auth-Token": admin_token}

    def call(method: str, path: str, body: dict | None = None) -> dict:
        resp = requests.request(method, api + path, headers=headers, json=body, timeout=60)
        assert resp.status_code < 300 or (method == "PUT" and resp.status_code == 409), \
            resp.text
        return resp.json() if resp.content else {}

    regions = call("GET", "/regions")["regions"]
    if REGION not in {r["id"] for r in regions}:
        call("POST", "/regions", {"region": {"id": REGION}})
    service = call("GET", "/services?type=placement")["services"][0]["id"]
    for endpoint in call("GET", f"/endpoints?service_id={service}")["endpoints"]:
        if endpoint["region_id"] == REGION:
            call("DELETE", f"/endpoints/{endpoint['id']}")
    for interface in ("public", "internal", "admin"):
        call("POST", "/endpoints", {"endpoint": {
            "service_id": service, "interface": interface, "url": url, "region_id": REGION}})


def client_env(keystone_url: str, user: str, password: str, project: str,
               ca_file: Path, venv: Path) -> dict[str, str]:
    """The ``OS_*`` variables an operator's openrc would set: Keystone, a
    password, the region whose catalog names the haproxy URL, and the
    throw-away CA."""
    return {"OS_AUTH_URL": keystone_url + "/v3", "OS_IDENTITY_API_VERSION": "3",
            "OS_AUTH_TYPE": "password", "OS_USERNAME": user, "OS_PASSWORD": password,
            "OS_PROJECT_NAME": project, "OS_USER_DOMAIN_NAME": "Default",
            "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": REGION,
            "OS_INTERFACE": "public", "OS_CACERT": str(ca_file),
            # test_plugin runs ``openstack --help``: the venv's command.
            "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}


def run(venv: Path, env: dict[str, str], skips: dict[str, str], scratch: Path,
        ) -> tuple[dict[str, list[str]], str]:
    """Every functional test, in one process; returns the outcome of each
    test and the runner's output."""
    scratch.mkdir(parents=True, exist_ok=True)
    results, skip_file = scratch / "results.json", scratch / "skip.json"
    skip_file.write_text(json.dumps(skips))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    done = subprocess.run([str(venv / "bin" / "python"), str(RUNNER), str(results),
                           str(skip_file)], env={**clean, **env}, cwd=scratch,
                          capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    if not results.exists():
        raise AssertionError(f"osc-placement's functional tests did not run:\n{output[-6000:]}")
    return json.loads(results.read_text()), output
