"""/metrics of allotment-api with several gunicorn workers: every worker's
requests counted once, whichever worker answers the scrape; the separate
metrics listener without credentials."""

from __future__ import annotations

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import servers

pytestmark = pytest.mark.slow

WORKERS = 3
REQUESTS = 60


def _count(text: str, route: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if (s.name == "allotment_http_requests_total"
                    and s.labels["route"] == route and s.labels["method"] == "GET"):
                total += s.value
    return total


def _providers(text: str) -> set[str]:
    return {s.labels["hostname"] for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "openstack_placement_resource_total"}


def test_several_workers_are_summed_once(tmp_path):
    port = servers.free_port()
    server = servers.start_allotment(
        f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "api", workers=WORKERS,
        extra_conf=f"[allotment]\nmetrics_bind = 127.0.0.1:{port}\n")
    with server:
        session = requests.Session()
        headers = server.headers()
        for n in range(4):
            resp = session.post(f"{server.url}/resource_providers", headers=headers,
                                json={"name": f"cn{n}"})
            assert resp.status_code == 200
            resp = session.put(
                f"{server.url}/resource_providers/{resp.json()['uuid']}/inventories",
                headers=headers,
                json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
            assert resp.status_code == 200
        for _ in range(REQUESTS):
            # A new connection each time, so the workers take turns.
            resp = requests.get(f"{server.url}/resource_providers", headers=headers)
            assert resp.status_code == 200
        pids = set(server.pids[1:])
        assert len(pids) == WORKERS
        # On the API's address: not served there when a listener is set.
        assert requests.get(f"{server.url}/metrics", headers=headers).status_code == 404
        listener = f"http://127.0.0.1:{port}"
        assert requests.get(f"{listener}/resource_providers").status_code == 404
        assert requests.get(f"{listener}/healthcheck").status_code == 200
        counts = set()
        for _ in range(2 * WORKERS):
            resp = requests.get(f"{listener}/metrics")
            assert resp.status_code == 200
            counts.add(_count(resp.text, "/resource_providers"))
            # Whichever worker answers has every provider, written by any.
            assert _providers(resp.text) == {f"cn{n}" for n in range(4)}
        assert counts == {REQUESTS}
