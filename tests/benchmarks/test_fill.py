"""The SQL fill serves both services alike, on every backend; and one tiny
run of the scheduling mix keeps its books."""

from __future__ import annotations

import json

import pytest

from benchmarks.side_by_side import fill, flavors, mix_run, verify
from benchmarks.side_by_side.client import Client
from tests.harness import backends
from tests.harness.backends import BACKENDS
from tests.harness.servers import start_allotment, start_upstream

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_filled_world_is_served_alike_by_upstream_and_by_allotment(backend, tmp_path):
    world = flavors.world("numa", 12)
    rows = fill.rows(world, 2)
    urls = {}
    for name in ("upstream", "allotment"):
        (tmp_path / name).mkdir()
        urls[name] = backends.create_database(backend, tmp_path / name, prefix="fill_test")
    try:
        for name, url in urls.items():
            fill.fill(url, rows, tmp_path / name)
        mix_run._adopt(urls["allotment"], tmp_path / "adopt")
        # Every consumer of the fill holds what it was given, within capacity.
        granted = {}
        for a in rows.tables["allocations"]:
            rp = next(p["uuid"] for p in rows.tables["resource_providers"]
                      if p["id"] == a["resource_provider_id"])
            rc = next(c["name"] for c in rows.tables["resource_classes"]
                      if c["id"] == a["resource_class_id"])
            granted.setdefault(a["consumer_id"], {}).setdefault(
                rp, {"resources": {}})["resources"][rc] = a["used"]
        books = verify.read(urls["allotment"], fill.FILL_PROJECT, {})
        assert len(books.held) == 24
        verdict = verify.check(books, granted, set())
        assert not verdict.lost and not verdict.extra and not verdict.over_capacity
        with start_upstream(urls["upstream"], tmp_path / "up", workers=1) as up, \
                start_allotment(urls["allotment"], tmp_path / "al", workers=1) as al:
            for flavor in flavors.FLAVORS["numa"]:
                answers = []
                for server in (up, al):
                    status, body, _ = Client(server.url).request("GET", flavor.path)
                    assert status == 200, body[:300]
                    answers.append(sorted(json.dumps(c["allocations"], sort_keys=True)
                                          for c in json.loads(body)["allocation_requests"]))
                assert answers[0] == answers[1] and answers[0], flavor.name
            # At 1.9: upstream's /usages by consumer type (1.38) fails on
            # PostgreSQL with a GROUP BY error.
            usages = [mix_run._client_factory(s.url, 60)("1.9").call(
                "GET", f"/usages?project_id={fill.FILL_PROJECT}") for s in (up, al)]
            assert usages[0] == usages[1]
            assert usages[1]["usages"]["VCPU"] == 24 * fill.HELD["VCPU"]
    finally:
        for url in urls.values():
            backends.drop_database(backend, url)


def test_a_tiny_mix_run_keeps_the_books_of_every_configuration(tmp_path, capsys):
    out = tmp_path / "mix.md"
    assert mix_run.main(["--backends", "sqlite", "--shapes", "flat", "--hosts", "10",
                         "--schedulings", "12", "--rounds", "1", "--threads", "1",
                         "--workers", "1", "--output", str(out)]) == 0
    text = out.read_text()
    assert "### sqlite, flat, 10 hosts (10 providers, 100 consumers before the rounds)" in text
    for name in ("upstream", "allotment", "allotment, randomized"):
        assert f"| {name} | " in text
    assert text.count("| held |") == 3
    assert "first candidates answer" in text and "worker RSS" in text
    assert text.count("one more worker started cold") == 3
