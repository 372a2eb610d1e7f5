"""The ``allotment`` command against a live server (and the database
directly): every command, every output format, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import yaml

from allotment.cli.main import main
from tests.cli.world import AGG

BIN = Path(sys.executable).parent


def run(live, capsys, *args: str, fmt: str = "json", extra: tuple[str, ...] = ()):
    code = main(["--url", live.url, "--token", "admin", *extra, "-f", fmt, *args])
    out, err = capsys.readouterr()
    return code, out, err


def api(live, path: str):
    resp = requests.get(live.url + path, headers=live.headers(), timeout=10)
    resp.raise_for_status()
    return resp.json()


def test_tree_numbers_match_the_api(live, capsys):
    w = live.world
    code, out, _ = run(live, capsys, "tree", "compute-1")
    assert code == 0
    tree = json.loads(out)
    assert tree["root"] == w.host1
    by_uuid = {p["uuid"]: p for p in tree["providers"]}
    assert [p["uuid"] for p in tree["providers"]] == [w.host1, w.numa, w.gpu]
    assert [p["depth"] for p in tree["providers"]] == [0, 1, 2]
    for uuid, provider in by_uuid.items():
        usages = api(live, f"/resource_providers/{uuid}/usages")["usages"]
        inventories = api(live, f"/resource_providers/{uuid}/inventories")["inventories"]
        assert {rc: u["used"] for rc, u in provider["usage"].items()} == usages
        for rc, record in inventories.items():
            capacity = int((record["total"] - record["reserved"])
                           * record["allocation_ratio"])
            assert provider["usage"][rc]["capacity"] == capacity
        assert provider["traits"] == sorted(
            api(live, f"/resource_providers/{uuid}/traits")["traits"])
    assert by_uuid[w.numa]["usage"]["VCPU"] == {"capacity": 16, "used": 4}
    assert [p["uuid"] for p in tree["sharing_providers"]] == [w.pool]
    assert tree["sharing_providers"][0]["usage"]["DISK_GB"] == {"capacity": 1900, "used": 50}


def test_tree_by_uuid_of_any_member_and_table(live, capsys):
    code, out, _ = run(live, capsys, "tree", live.world.gpu, fmt="table")
    assert code == 0
    assert "tree of compute-1" in out
    assert "└ compute-1_gpu0" in out
    assert "1/4 (25%)" in out
    assert "sharing providers" in out and "shared-disk" in out


def test_tree_of_unknown_host_is_an_error(live, capsys):
    code, _, err = run(live, capsys, "tree", "no-such-host")
    assert code == 1
    assert "no-such-host" in err


def test_hosts_sum_each_tree(live, capsys):
    code, out, _ = run(live, capsys, "hosts", "--name", "COMPUTE", fmt="yaml")
    assert code == 0
    hosts = {h["name"]: h for h in yaml.safe_load(out)["hosts"]}
    assert set(hosts) == {"compute-1", "compute-2"}
    assert hosts["compute-1"]["providers"] == 3
    assert hosts["compute-2"]["usage"]["VCPU"] == {"capacity": 16, "used": 2}
    assert not hosts["compute-1"]["sharing"]
    code, out, _ = run(live, capsys, "hosts", "--name", "shared", fmt="table")
    assert "shared-disk (sharing)" in out


def test_granular_candidates_with_same_subtree(live, capsys):
    w = live.world
    code, out, _ = run(
        live, capsys, "candidates", "-r", "VCPU:2",
        "-g", "_GPU resources=VGPU:1 required=CUSTOM_GOLD",
        "-g", "_NUMA required=HW_CPU_X86_AVX2",
        "--same-subtree", "_GPU,_NUMA", "--group-policy", "none")
    assert code == 0
    found = json.loads(out)
    assert found
    for candidate in found:
        assert candidate["host_uuid"] == w.host1
        by_provider = {a["provider_uuid"]: a for a in candidate["allocations"]}
        assert by_provider[w.gpu]["resources"] == {"VGPU": 1}
        assert "_GPU" in by_provider[w.gpu]["groups"]
        assert "_NUMA" in by_provider[w.numa]["groups"]  # resourceless group


def test_candidates_filters_and_limit(live, capsys):
    w = live.world
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:1",
                       "--root-required", "!CUSTOM_GOLD", "--member-of", f"in:{AGG}")
    hosts = {c["host_uuid"] for c in json.loads(out)}
    assert code == 0 and hosts == {w.host1, w.host2}
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:1", "--limit", "1")
    assert len(json.loads(out)) == 1
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:1",
                       "--required", "in:HW_CPU_X86_AVX2,CUSTOM_GOLD")
    assert {c["host_uuid"] for c in json.loads(out)} == {w.host1}
    code, out, err = run(live, capsys, "candidates", "-r", "VCPU:1000", fmt="table")
    assert code == 1 and "No candidate fits" in err
    code, out, err = run(live, capsys, "candidates", "-r", "VCPU:1",
                         "--required", "CUSTOM_NOWHERE")
    assert code == 1 and "No such trait" in err


def test_candidates_what_if(live, capsys):
    w = live.world
    # compute-2 has 14 of 16 VCPU free, the NUMA node 12: 15 fits nowhere,
    # unless the migration on compute-2 goes.
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:15",
                       "--ignore-consumer", w.migration)
    found = json.loads(out)
    assert code == 0 and [(c["host_uuid"], c["displaces"]) for c in found] == [
        (w.host2, [w.migration])]
    assert found[0]["allocations"][0]["usage"]["VCPU"] == {"used": 0, "capacity": 16}
    # MIGRATION is preemptible on this server (tests/cli/conftest.py).
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:15", "--preempt")
    found = json.loads(out)
    assert [c["host_uuid"] for c in found] == [w.host2]
    assert [(v["consumer_uuid"], v["consumer_type"], v["user_id"])
            for v in found[0]["evicts"]] == [(w.migration, "MIGRATION", "bob")]
    code, out, _ = run(live, capsys, "candidates", "-r", "VCPU:15", "--preempt", fmt="table")
    assert "consumers in the way" in out and w.migration in out and "evicts" in out


def test_candidates_usage_errors(live, capsys):
    code, _, err = run(live, capsys, "candidates", "-r", "VCPU")
    assert code == 2 and "RESOURCE_CLASS:AMOUNT" in err
    code, _, err = run(live, capsys, "candidates", "-r", "VCPU:1", "-g", "_A resources=VGPU:1",
                       "-g", "_B resources=VGPU:1")
    assert code == 2 and "group_policy" in err
    code, _, err = run(live, capsys, "candidates", "-r", "VCPU:1", "--same-subtree", "_X")
    assert code == 2 and "_X" in err


def test_usages_by_consumer_type(live, capsys):
    code, out, _ = run(live, capsys, "usages", "--project", "proj")
    assert code == 0
    usages = json.loads(out)
    assert usages == api(live, "/usages?project_id=proj")["usages"]
    assert usages["MIGRATION"] == {"consumer_count": 1, "VCPU": 2}
    code, out, _ = run(live, capsys, "usages", "--project", "proj", "--consumer-type", "all",
                       fmt="table")
    assert code == 0 and "all" in out


def test_consumer_show_and_set_type(live, capsys):
    w = live.world
    code, out, _ = run(live, capsys, "consumer", "show", w.instance)
    assert json.loads(out)["consumer_type"] == "INSTANCE"
    code, out, _ = run(live, capsys, "consumer", "set-type", w.migration, "EVACUATION")
    assert code == 0
    record = api(live, f"/allocations/{w.migration}")
    assert record["consumer_type"] == "EVACUATION"
    assert record["allocations"][w.host2]["resources"] == {"VCPU": 2}


def test_reshape_from_file(live, capsys, tmp_path):
    w = live.world
    inventories = api(live, f"/resource_providers/{w.host2}/inventories")
    record = api(live, f"/allocations/{w.migration}")
    body = {
        "inventories": {w.host2: {
            "resource_provider_generation": inventories["resource_provider_generation"],
            "inventories": {"VCPU": {"total": 12}, "MEMORY_MB": {"total": 16384}}}},
        "allocations": {w.migration: {
            "allocations": {w.host2: {"resources": {"VCPU": 3}}},
            "project_id": record["project_id"], "user_id": record["user_id"],
            "consumer_generation": record["consumer_generation"],
            "consumer_type": record["consumer_type"]}},
    }
    path = tmp_path / "reshape.json"
    path.write_text(json.dumps(body))
    code, _, err = run(live, capsys, "reshape", str(path))
    assert code == 1 and "403" in err
    code, out, err = run(live, capsys, "reshape", str(path),
                         extra=("-H", "X-Roles: admin,service"))
    assert code == 0, err
    assert json.loads(out)["reshaped"] == [w.host2]
    assert api(live, f"/resource_providers/{w.host2}/inventories")[
        "inventories"]["VCPU"]["total"] == 12
    assert api(live, f"/allocations/{w.migration}")["allocations"][w.host2][
        "resources"] == {"VCPU": 3}
    path.write_text("{not json")
    code, _, err = run(live, capsys, "reshape", str(path))
    assert code == 2 and "not JSON" in err
    # The module's other tests share this cloud: put compute-2 back as it was.
    now = api(live, f"/allocations/{w.migration}")
    restore = {
        "inventories": {w.host2: {
            "resource_provider_generation": api(
                live, f"/resource_providers/{w.host2}/inventories")["resource_provider_generation"],
            "inventories": inventories["inventories"]}},
        "allocations": {w.migration: {
            "allocations": record["allocations"], "project_id": record["project_id"],
            "user_id": record["user_id"], "consumer_generation": now["consumer_generation"],
            "consumer_type": now["consumer_type"]}},
    }
    resp = requests.post(live.url + "/reshaper", json=restore, timeout=10,
                         headers=live.headers(**{"X-Roles": "admin,service"}))
    assert resp.status_code == 204, resp.text


@pytest.mark.parametrize("args", [
    ("tree", "compute-1"), ("hosts",), ("usages", "--project", "proj"),
    ("candidates", "-r", "VCPU:1,DISK_GB:5", "--limit", "3")])
def test_direct_transport_answers_as_the_server(live, capsys, args):
    code, out_http, _ = run(live, capsys, *args)
    code_direct = main(["--database-url", live.database_url, "-f", "json", *args])
    out_direct, _ = capsys.readouterr()
    assert code == code_direct == 0
    assert json.loads(out_direct) == json.loads(out_http)


def test_console_script(live):
    done = subprocess.run([str(BIN / "allotment"), "--url", live.url, "--token", "admin",
                           "hosts"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "compute-2" in done.stdout


def test_no_service_named_is_a_usage_error(monkeypatch, capsys):
    for name in ("OS_AUTH_URL", "OS_CLOUD", "OS_PLACEMENT_URL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["hosts"]) == 2
    assert "--url" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_every_format_of_usages(live, capsys, fmt):
    code, out, _ = run(live, capsys, "usages", "--project", "proj", fmt=fmt)
    assert code == 0 and "VCPU" in out


@pytest.mark.parametrize("args,reason", [
    (("-r", "VCPU:64"), "no provider has 64 VCPU free"),
    (("-r", "VCPU:1", "--required", "CUSTOM_GOLD"), "not together with its required traits"),
    (("-r", "VGPU:1,VCPU:14"), "no single tree"),
    (("-r", "VCPU:1", "--root-required", "HW_CPU_X86_AVX2"), "root_required=HW_CPU_X86_AVX2"),
    (("-g", "_G resources=VGPU:1", "-g", "_C resources=VCPU:20", "--group-policy", "none"),
     "group _C: no provider has 20 VCPU free"),
    # compute-2 has no VGPU.
    (("-g", "_G resources=VGPU:1 in_tree=HOST2", "-g", "_M resources=MEMORY_MB:1024",
      "--group-policy", "none"), "group _G: its resources fit, but not together with its "
                                 "in_tree"),
    # Only the sharing pool has 1500 DISK_GB, and it is in no host's subtree.
    (("-g", "_G resources=VGPU:1", "-g", "_D resources=DISK_GB:1500",
      "--group-policy", "none", "--same-subtree", "_G,_D"), "same_subtree"),
])
def test_why_nothing_fits(live, capsys, args, reason):
    args = tuple(a.replace("HOST2", live.world.host2) for a in args)
    code, out, err = run(live, capsys, "candidates", "--why", *args)
    assert code == 1, err  # nothing fits
    answer = json.loads(out)
    assert answer["candidates"] == []
    assert any(reason in r for r in answer["why"]), answer["why"]


def test_why_is_empty_when_something_fits(live, capsys):
    code, out, _ = run(live, capsys, "candidates", "--why", "-r", "VCPU:1")
    answer = json.loads(out)
    assert code == 0 and answer["candidates"] and answer["why"] == []
    code, out, _ = run(live, capsys, "candidates", "--why", "-r", "VCPU:64", fmt="table")
    assert code == 1 and "why nothing fits" in out and "64 VCPU" in out


def test_explain_names_why_each_host_yields_nothing(live, capsys):
    code, out, err = run(live, capsys, "candidates", "--explain", "10", "-r", "VCPU:64")
    assert code == 1, err  # nothing fits
    answer = json.loads(out)
    assert answer["candidates"] == []
    by_host = {row["host"]: row["why"] for row in answer["explanation"]}
    # Both compute hosts have VCPU, neither has 64 free.
    for host in ("compute-1", "compute-2"):
        assert by_host[host].startswith("group (unsuffixed): capacity"), by_host
        assert "requested=64" in by_host[host]
    code, out, _ = run(live, capsys, "candidates", "--explain", "10", "-r", "VCPU:64",
                       fmt="table")
    assert code == 1 and "why it yields no candidate" in out and "compute-2" in out


def test_explain_alongside_candidates(live, capsys):
    code, out, _ = run(live, capsys, "candidates", "--explain", "5", "-r", "VGPU:1")
    answer = json.loads(out)
    assert code == 0
    assert answer["candidates"] and answer["candidates"][0]["host"] == "compute-1"
    # compute-2 has no VGPU at all.
    assert any(row["host"] == "compute-2" and "no_inventory" in row["why"]
               for row in answer["explanation"])
