"""``allotment compare``: upstream Placement and allotment on one database
answer alike, and a difference is reported."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from allotment.cli.main import main
from tests.harness.servers import start_allotment, start_upstream

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}


def _world(url: str) -> None:
    """A host with a NUMA child, a custom class and a consumer, through the API."""
    def put(path, body):
        requests.put(url + path, json=body, headers=HEADERS, timeout=30).raise_for_status()

    def post(path, body):
        requests.post(url + path, json=body, headers=HEADERS, timeout=30).raise_for_status()

    host, numa = str(uuid.uuid4()), str(uuid.uuid4())
    post("/resource_providers", {"uuid": host, "name": f"host-{host[:8]}"})
    post("/resource_providers", {"uuid": numa, "name": f"numa-{numa[:8]}",
                                 "parent_provider_uuid": host})
    put("/resource_classes/CUSTOM_GOLD", None)
    put(f"/resource_providers/{host}/inventories", {"resource_provider_generation": 0,
        "inventories": {"DISK_GB": {"total": 100}, "CUSTOM_GOLD": {"total": 4}}})
    put(f"/resource_providers/{numa}/inventories", {"resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}}})
    put(f"/allocations/{uuid.uuid4()}", {
        "allocations": {host: {"resources": {"DISK_GB": 10, "CUSTOM_GOLD": 1}},
                        numa: {"resources": {"VCPU": 2}}},
        "project_id": "p1", "user_id": "u1", "consumer_generation": None,
        "consumer_type": "INSTANCE"})


def test_both_services_on_one_database_answer_alike(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'placement.sqlite'}"
    with start_upstream(url, tmp_path / "upstream", workers=1) as upstream:
        _world(upstream.url)
        conf = tmp_path / "placement.conf"
        conf.write_text(f"[placement_database]\nconnection = {url}\n")
        synced = subprocess.run([str(BIN / "allotment-manage"), "--config-file", str(conf),
                                 "db", "sync"], capture_output=True, text=True, timeout=120)
        assert synced.returncode == 0, synced.stderr
        assert "Adopted upstream Placement's database" in synced.stdout
        with start_allotment(url, tmp_path / "allotment", workers=1) as allotment:
            code = main(["--url", allotment.url, "--token", "admin", "compare",
                         upstream.url])
            out = capsys.readouterr().out
            assert code == 0, out
            assert "0 differ" in out
            reads = int(out.strip().splitlines()[-1].split()[0])
            assert reads > 30
            # Another world elsewhere answers differently, and it is said.
            with start_upstream(f"sqlite:///{tmp_path / 'other.sqlite'}",
                                tmp_path / "other", workers=1) as other:
                _world(other.url)
                code = main(["--url", allotment.url, "--token", "admin", "compare",
                             other.url])
                out = capsys.readouterr().out
                assert code == 1
                assert "DIFFERS /resource_providers" in out
