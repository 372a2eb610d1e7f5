"""The adoption benchmark: its SQL fill is a world upstream serves, and a
tiny run prints both timings."""

from __future__ import annotations

import re

import pytest
import requests

from benchmarks import adoption, upstream_fill
from tests.adoption import dump, manage
from tests.harness import backends
from tests.harness.servers import start_upstream


def test_upstream_serves_the_filled_world(tmp_path):
    url = backends.create_database("sqlite", tmp_path)
    assert manage.placement_manage(tmp_path, url, "db", "sync").code == 0
    engine = dump.engine_for(url)
    filled = upstream_fill.fill(engine, hosts=3, consumers_per_host=2)
    engine.dispose()
    assert (filled.providers, filled.consumers) == (3 * 9 + 1 + 1, 6)
    with start_upstream(url, tmp_path / "upstream", workers=1) as up:
        def get(path: str) -> dict:
            resp = requests.get(up.url + path, headers=up.headers(), timeout=60)
            assert resp.status_code == 200, resp.text
            return resp.json()

        providers = get("/resource_providers")["resource_providers"]
        assert len(providers) == filled.providers
        roots = {p["root_provider_uuid"] for p in providers}
        assert len(roots) == 3 + 1  # the hosts and the disk pool
        used = {}
        for p in providers:
            for rc, n in get(f"/resource_providers/{p['uuid']}/usages")["usages"].items():
                used[rc] = used.get(rc, 0) + n
        # Two consumers a host: VCPU 1 and 2, 2048 MB each, 20 GB, one VF.
        assert used == {"VCPU": 9, "MEMORY_MB": 12 * 1024, "DISK_GB": 120,
                        "SRIOV_NET_VF": 6, "CUSTOM_FPGA": 0}
        answer = get("/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10"
                     "&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_A&group_policy=none")
        assert {s["root_provider_uuid"] for s in answer["provider_summaries"].values()} == roots
        assert get("/resource_providers?resources=CUSTOM_FPGA:1")["resource_providers"]


@pytest.mark.parametrize("backend", sorted(backends.SERVER_URLS))
def test_a_tiny_run_times_adoption_and_hand_back(backend, capsys):
    assert adoption.main(["--backend", backend, "--hosts", "5"]) == 0
    out = capsys.readouterr().out
    assert f"{backend}: 47 providers, 50 consumers" in out
    for label in ("adopt", "hand back"):
        assert re.search(rf"^  {label} +[\d.]+ s  \(target 60 s: (met|MISSED)\)$", out, re.M), out
