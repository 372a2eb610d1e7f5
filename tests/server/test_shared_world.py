"""allotment-api's shared world ([allotment] shared_world): the world is read
once, by the server's main process; every worker, and every worker started
in place of one that exited, begins from it, brought up to date just before
the worker starts, and reads only the feed after it."""

from __future__ import annotations

import os
import signal
import time
import uuid
from types import SimpleNamespace

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from allotment.cmd import api as api_cmd
from tests.harness.servers import Server, start_allotment


def _reloads(server: Server) -> float:
    resp = requests.get(server.url + "/metrics", headers=server.headers(), timeout=30)
    assert resp.status_code == 200, resp.text
    return sum(s.value for family in text_string_to_metric_families(resp.text)
               for s in family.samples if s.name == "allotment_world_reloads_total")


def _add_provider(server: Server, name: str) -> str:
    rp = str(uuid.uuid4())
    resp = requests.post(server.url + "/resource_providers", headers=server.headers("1.20"),
                         json={"name": name, "uuid": rp}, timeout=30)
    assert resp.status_code == 200, resp.text
    resp = requests.put(server.url + f"/resource_providers/{rp}/inventories",
                        headers=server.headers("1.20"), timeout=30,
                        json={"resource_provider_generation": 0,
                              "inventories": {"VCPU": {"total": 4}}})
    assert resp.status_code == 200, resp.text
    return rp


def _replace_the_worker(server: Server) -> None:
    """Kill the server's one worker and wait until another took its place."""
    _, old = server.pids
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        pids = server.pids
        if len(pids) == 2 and pids[1] != old:
            return
        assert time.monotonic() < deadline, server.log_text()[-3000:]
        time.sleep(0.05)


@pytest.mark.parametrize("shared", [True, False])
def test_a_worker_started_in_place_of_another_reads_only_the_feed(
        database_url, tmp_path, shared):
    # Counted across processes (the master's own counts apart), so that the
    # replaced worker's whole reads, if any, show.
    metrics = tmp_path / "metrics"
    server = start_allotment(
        database_url, tmp_path, workers=1,
        extra_conf=f"[allotment]\nshared_world = {str(shared).lower()}\n",
        env={"PROMETHEUS_MULTIPROC_DIR": str(metrics)})
    with server:
        before = _add_provider(server, f"before-{uuid.uuid4()}")
        # Written while the main process's world is behind: the worker
        # started next must still see it, and the one written after.
        _replace_the_worker(server)
        after = _add_provider(server, f"after-{uuid.uuid4()}")
        resp = requests.get(server.url + "/allocation_candidates?resources=VCPU:4",
                            headers=server.headers("1.39"), timeout=30)
        assert resp.status_code == 200, resp.text
        assert {before, after} <= set(resp.json()["provider_summaries"])
        # Shared: the main process read the world once, no worker did.
        # Not shared: the first worker, then the one in its place.
        assert _reloads(server) == (1 if shared else 2)
        assert "Traceback" not in server.log_text()


def test_a_shared_world_that_cannot_be_brought_up_to_date_is_not_handed_on(caplog, monkeypatch):
    # The database is unreachable just before a worker starts: the worker
    # must not start from a world that may be behind; it reads its own.
    disposed = []

    def fail() -> None:
        raise ConnectionError("database unreachable")

    world = SimpleNamespace(world=object(), catch_up=fail,
                            db=SimpleNamespace(dispose=lambda: disposed.append(True)))
    monkeypatch.setattr(api_cmd.gc, "freeze", lambda: pytest.fail("froze"))
    api_cmd._pre_fork(SimpleNamespace(app=SimpleNamespace(world=world)), None)
    assert world.world is None
    assert disposed == [True]
    assert "reads the whole world itself" in caplog.text


def test_what_loading_left_behind_is_given_back_before_a_fork(monkeypatch):
    # A forked worker maps every resident page of the main process: the
    # garbage of loading the world is collected and its pages returned
    # before the rest is frozen and shared.
    done = []
    world = SimpleNamespace(world=object(), catch_up=lambda: done.append("caught up"),
                            db=SimpleNamespace(dispose=lambda: done.append("disposed")))
    monkeypatch.setattr(api_cmd.gc, "collect", lambda: done.append("collected"))
    monkeypatch.setattr(api_cmd.malloc, "give_back", lambda: done.append("given back"))
    monkeypatch.setattr(api_cmd.gc, "freeze", lambda: done.append("frozen"))
    api_cmd._pre_fork(SimpleNamespace(app=SimpleNamespace(world=world)), None)
    assert done == ["caught up", "disposed", "collected", "given back", "frozen"]
