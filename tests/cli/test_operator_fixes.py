"""What an operator trips over, fixed: hosts in one request with filters,
sorting and totals; ``-f`` after the command; read-only views whatever
``OS_PLACEMENT_API_VERSION`` says; usages below 1.38; ``consumer show``
with names and a clear error; candidates with used/capacity, stable order,
``RC=N`` and a non-zero exit when nothing fits."""

from __future__ import annotations

import json

import pytest
import requests

from allotment.cli.main import main
from allotment.client import PlacementClient
from allotment.client import report as reports
from tests.cli.test_cli import run
from tests.cli.world import AGG


class CountingTransport:
    """Counts the requests a client makes."""

    def __init__(self, inner) -> None:
        self.inner, self.count = inner, 0

    def request(self, *args, **kw):
        self.count += 1
        return self.inner.request(*args, **kw)

    def close(self) -> None:
        self.inner.close()


def test_hosts_is_one_request(live):
    with PlacementClient.from_url(live.url, token="admin") as client:
        counting = CountingTransport(client.transport)
        client.transport = counting
        found = reports.host_list(client)
    assert counting.count == 1 and found.requests == 1
    assert {h.name for h in found.hosts} == {"compute-1", "compute-2", "shared-disk"}


class WithoutExtensions(CountingTransport):
    """Answers as upstream Placement would: without the extensions' echo."""

    def request(self, *args, **kw):
        resp = super().request(*args, **kw)
        resp.headers.pop("allotment-extensions", None)
        return resp


def test_hosts_against_a_service_without_the_extension_reads_each_provider(live):
    with PlacementClient.from_url(live.url, token="admin") as client:
        one = reports.host_list(client)
        plain = WithoutExtensions(client.transport)
        client.transport = plain
        each = reports.host_list(client)
    providers = sum(h.providers for h in one.hosts)
    assert each.requests == plain.count == 1 + 4 * providers
    assert each.as_dict() == one.as_dict()


def test_hosts_filters_sorting_and_totals(live, capsys):
    code, out, _ = run(live, capsys, "hosts", "--trait", "CUSTOM_GOLD")
    assert code == 0
    assert [h["name"] for h in json.loads(out)["hosts"]] == ["compute-1"]
    code, out, _ = run(live, capsys, "hosts", "--class", "VGPU")
    assert [h["name"] for h in json.loads(out)["hosts"]] == ["compute-1"]
    code, out, _ = run(live, capsys, "hosts", "--aggregate", AGG)
    assert len(json.loads(out)["hosts"]) == 3
    code, out, _ = run(live, capsys, "hosts", "--aggregate", "no-such-aggregate")
    assert json.loads(out)["hosts"] == []
    # compute-2 has 2 of 16 VCPU used (12%), compute-1 4 of 16 (25%).
    code, out, _ = run(live, capsys, "hosts", "--sort", "usage", "--class", "VCPU")
    assert [h["name"] for h in json.loads(out)["hosts"]] == ["compute-1", "compute-2"]
    code, out, _ = run(live, capsys, "hosts")
    body = json.loads(out)
    assert body["total"]["VCPU"] == {"capacity": 32, "used": 6}
    assert body["total"]["DISK_GB"] == {"capacity": 2000, "used": 50}
    assert body["by_aggregate"][AGG]["VCPU"] == {"capacity": 32, "used": 6}
    code, out, _ = run(live, capsys, "hosts", "--by-aggregate", fmt="table")
    assert "total of 3 hosts" in out and "per aggregate" in out and AGG in out
    assert "6/32 (19%)" in out


def test_format_after_the_command(live, capsys):
    code = main(["--url", live.url, "--token", "admin", "hosts", "-f", "json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["hosts"]
    code = main(["--url", live.url, "--token", "admin", "-f", "yaml",
                 "consumer", "show", live.world.migration, "--format", "json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["consumer_type"] == "MIGRATION"


@pytest.mark.parametrize("args", [("hosts",), ("tree", "compute-1"),
                                  ("consumer", "show", "MIGRATION")])
def test_read_only_views_whatever_the_configured_version(live, capsys, monkeypatch, args):
    monkeypatch.setenv("OS_PLACEMENT_API_VERSION", "1.2")
    args = tuple(live.world.migration if a == "MIGRATION" else a for a in args)
    code, out, err = run(live, capsys, *args)
    assert code == 0, err
    assert json.loads(out)


def test_usages_below_1_38_are_the_totals(live, capsys):
    code, out, err = run(live, capsys, "usages", "--project", "proj",
                         extra=("--os-placement-api-version", "1.20"))
    assert code == 0, err
    assert json.loads(out) == {"VCPU": 6, "MEMORY_MB": 8192, "VGPU": 1, "DISK_GB": 50}
    code, out, _ = run(live, capsys, "usages", "--project", "proj", fmt="table",
                       extra=("--os-placement-api-version", "1.20"))
    assert "VGPU" in out and "8192" in out


def test_consumer_show_names_providers_and_hosts(live, capsys):
    code, out, _ = run(live, capsys, "consumer", "show", live.world.instance)
    assert code == 0
    allocations = json.loads(out)["allocations"]
    assert allocations[live.world.gpu]["provider"] == "compute-1_gpu0"
    assert allocations[live.world.gpu]["host"] == "compute-1"
    assert allocations[live.world.pool]["host"] == "shared-disk"
    code, out, _ = run(live, capsys, "consumer", "show", live.world.instance, fmt="table")
    assert "compute-1_numa0" in out and "compute-1 " in out


def test_unknown_consumer_is_an_error(live, capsys):
    code, _, err = run(live, capsys, "consumer", "show",
                       "00000000-0000-0000-0000-00000000abcd")
    assert code == 1
    assert "No consumer 00000000-0000-0000-0000-00000000abcd" in err


def test_candidates_show_used_and_capacity_in_a_stable_order(live, capsys):
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU=1,DISK_GB=5")
    assert code == 0
    found = json.loads(out)
    assert found
    for candidate in found:
        names = [a["provider"] for a in candidate["allocations"]]
        # The host's own providers first, each part by name.
        own = [n for n in names if n.startswith(candidate["host"])]
        assert names == sorted(own) + sorted(n for n in names if n not in own)
        for alloc in candidate["allocations"]:
            assert set(alloc["usage"]) == set(alloc["resources"])
    by_host = {c["host"]: c for c in found}
    numa = next(a for a in by_host["compute-1"]["allocations"]
                if a["provider"] == "compute-1_numa0")
    assert numa["usage"]["VCPU"] == {"used": 4, "capacity": 16}
    code, again, _ = run(live, capsys, "candidates", "-r", "VCPU:1,DISK_GB:5")
    assert json.loads(again) == found
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:1", fmt="table")
    assert "used/capacity" in out and "VCPU 4/16" in out


def test_candidates_exit_non_zero_when_nothing_fits(live, capsys):
    code, out, err = run(live, capsys, "candidates", "-r", "VCPU:1000")
    assert code == 1 and json.loads(out) == []
    code, _, err = run(live, capsys, "candidates", "-r", "VCPU:1000", fmt="table")
    assert code == 1 and "No candidate fits" in err


def test_candidates_name_providers_with_one_listing(live, capsys):
    seen = []
    original = requests.Session.request

    def spy(self, method, url, *a, **kw):
        seen.append((method, url.split("?")[0]))
        return original(self, method, url, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(requests.Session, "request", spy)
        code, _, _ = run(live, capsys, "candidates", "-r", "VCPU:1")
    assert code == 0
    assert not [u for m, u in seen if "/resource_providers/" in u]


def test_capacity(live, capsys):
    code, out, err = run(live, capsys, "capacity", "-r", "VCPU=1")
    assert code == 0, err
    room = json.loads(out)
    # compute-1's NUMA node: 16 VCPU, 4 used; compute-2: 8 at ratio 2, 2 used.
    assert {h["name"]: h["count"] for h in room["hosts"]} == {"compute-1": 12,
                                                              "compute-2": 14}
    assert room["total"] == 26
    code, out, _ = run(live, capsys, "capacity", "-r", "VCPU:1", "--hosts", "1",
                       fmt="table")
    assert "instances that fit" in out and "26" in out
    assert "compute-2" in out and "compute-1 " not in out  # roomiest first, one listed


def test_explain_reports_counters_reasons_and_near_misses_first(live, capsys):
    # compute-1's NUMA node has 12 VCPU free, compute-2 14: asking 15, compute-2
    # misses by 1 and compute-1 by 3; the pool has no VCPU at all.
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:15", "--explain", "10")
    assert code == 1
    answer = json.loads(out)
    assert answer["counters"]["trees_with_candidates"] == 0
    assert answer["counters"]["trees_examined"] >= 2
    assert sum(answer["reasons"].values()) == len(answer["explanation"])
    hosts = [row["host"] for row in answer["explanation"]]
    assert hosts.index("compute-2") < hosts.index("compute-1")
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:15", "--explain", "10",
                       fmt="table")
    assert "what the service examined" in out and "hosts ruled out, by reason" in out
    assert "nearest misses first" in out
