"""What operating a large cloud costs: a /metrics scrape, the headroom of 20
flavors (with nothing changed since the last scrape, after one more
instance was claimed, and the first scrape of a process just started,
which counts every tree), ``allotment hosts`` and the ``/ui`` host list.

Run: ``.venv/bin/python benchmarks/operators_bench.py [--hosts 10000]
[--repeat 5] [--database-url URL]``.  The world is http_bench's (flat hosts,
NUMA hosts with PFs and GPUs, diskless hosts on shared pools; a third of the
flat hosts with a server), written with bulk INSERTs into a scratch SQLite
database unless a URL is given.  Everything goes through the WSGI
application in this process (no sockets): the numbers are the service's
own work.  Prints the median and the slowest wall time of ``--repeat`` runs
after one warm-up, and the median CPU time (the work, whatever else the
machine does); asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from unittest import mock

import webob

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allotment import conf as conf_mod
from allotment.cli import main as cli_main
from allotment.client import DirectTransport, PlacementClient
from allotment.client import report as reports
from allotment.server.app import create_app
from allotment.storage.db import Database, create_engine
from benchmarks import http_bench
from benchmarks.http_bench import build_world

# Twenty flavors: the usual general-purpose sizes, memory- and CPU-heavy
# ones, and a few with traits or granular groups.
FLAVORS = [
    *(f"m1.{n}=resources=VCPU:{v},MEMORY_MB:{m},DISK_GB:{d}" for n, v, m, d in (
        ("tiny", 1, 512, 1), ("small", 1, 2048, 20), ("medium", 2, 4096, 40),
        ("large", 4, 8192, 80), ("xlarge", 8, 16384, 160))),
    *(f"r1.{n}=resources=VCPU:{v},MEMORY_MB:{m},DISK_GB:20" for n, v, m in (
        ("large", 2, 16384), ("xlarge", 4, 32768), ("2xlarge", 8, 65536))),
    *(f"c1.{n}=resources=VCPU:{v},MEMORY_MB:{m},DISK_GB:20" for n, v, m in (
        ("large", 8, 4096), ("xlarge", 16, 8192), ("2xlarge", 32, 16384))),
    "avx.medium=resources=VCPU:2,MEMORY_MB:4096,DISK_GB:40&required=HW_CPU_X86_AVX2",
    "avx.large=resources=VCPU:4,MEMORY_MB:8192,DISK_GB:80&required=HW_CPU_X86_AVX2",
    "nomulti.small=resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20"
    "&root_required=!COMPUTE_VOLUME_MULTI_ATTACH",
    "gpu.small=resources=DISK_GB:20&resources_C=VCPU:2,MEMORY_MB:4096&resources_G=VGPU:1"
    "&group_policy=none&same_subtree=_C,_G",
    "gpu.large=resources=DISK_GB:40&resources_C=VCPU:8,MEMORY_MB:16384&resources_G=VGPU:2"
    "&group_policy=none&same_subtree=_C,_G",
    "sriov.small=resources=DISK_GB:20&resources_C=VCPU:2,MEMORY_MB:4096"
    "&resources_N=SRIOV_NET_VF:1&group_policy=none&same_subtree=_C,_N",
    "sriov.large=resources=DISK_GB:40&resources_C=VCPU:8,MEMORY_MB:16384"
    "&resources_N=SRIOV_NET_VF:2&group_policy=none&same_subtree=_C,_N",
    "tiny.noavx=resources=VCPU:1,MEMORY_MB:512,DISK_GB:1&required=!HW_CPU_X86_AVX2",
    "pf.only=resources=DISK_GB:10&resources_N=SRIOV_NET_VF:4&group_policy=none",
]


def _get(app, path: str, *, accept: str = "application/json") -> webob.Response:
    req = webob.Request.blank(path)
    req.headers["OpenStack-API-Version"] = "placement 1.39"
    req.headers["X-Auth-Token"] = "admin"
    req.headers["Accept"] = accept
    resp = req.get_response(app)
    if resp.status_code != 200:
        raise SystemExit(f"{path}: {resp.status} {resp.text[:300]}")
    return resp


def _timed(action) -> tuple[float, float, object]:
    """Wall and CPU time (ms) of one ``action()``, and what it returned.

    Everything runs in this one thread, so the CPU time is the work done,
    whatever else the machine runs; on a busy machine the wall time is
    larger by however long the process waited for a core.
    """
    start, start_cpu = time.perf_counter(), time.process_time()
    result = action()
    return ((time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000,
            result)


def _row(name: str, runs: list[tuple[float, float, object]]) -> tuple:
    """Median and slowest wall time, median CPU time and the last result."""
    walls = [w for w, _, _ in runs]
    return (name, statistics.median(walls), max(walls),
            statistics.median(c for _, c, _ in runs), runs[-1][2])


def _time(action, repeat: int, before=None) -> tuple[float, float, float, object]:
    """:func:`_row` of ``repeat`` runs of ``action`` after one warm-up
    (``before()`` runs, untimed, before each)."""
    action()  # warm-up: the first answer after start also loads the world
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        runs.append(_timed(action))
    return _row("", runs)[1:]


def _after_start(conf, db: Database, repeat: int) -> list[tuple]:
    """A process starting: its world built (create_app reads it), then its
    first scrape, which makes every provider's series and (with flavors)
    counts the headroom of every flavor on every tree afresh.  Each run is
    a new application with a world of its own; the first scrape is timed
    without flavors and with them, so that the headroom's share shows."""
    def scrape(app) -> int:
        return len(_get(app, "/metrics").body)

    flavors = conf.allotment.capacity_flavors
    conf.set_override("capacity_flavors", [], group="allotment")
    plain = []
    for _ in range(max(1, repeat)):
        app = create_app(conf, db=db)
        plain.append(_timed(lambda app=app: scrape(app)))
    conf.set_override("capacity_flavors", flavors, group="allotment")
    builds, scrapes = [], []
    for _ in range(max(1, repeat)):
        wall, cpu, app = _timed(lambda: create_app(conf, db=db))
        builds.append((wall, cpu, ""))
        scrapes.append(_timed(lambda app=app: scrape(app)))
    return [_row("start: the world built (create_app)", builds),
            _row("first GET /metrics after a start (placement series)", plain),
            _row(f"first GET /metrics after a start (+ headroom of {len(FLAVORS)})", scrapes)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="allotment-ops-bench-")
    url = args.database_url or f"sqlite:///{scratch.name}/bench.sqlite"
    conf = conf_mod.load(config_files=[], overrides={
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": url, "sync_on_startup": True},
        "allotment": {"capacity_flavors": FLAVORS, "audit_metrics_interval": 0}})
    db = Database(create_engine(url))
    app = create_app(conf, db=db)
    start = time.perf_counter()
    providers = build_world(db, args.hosts)
    print(f"{args.hosts} hosts, {providers} providers "
          f"(written in {time.perf_counter() - start:.1f} s)")
    client = PlacementClient(DirectTransport(app))

    rows = []
    conf.set_override("capacity_flavors", [], group="allotment")
    plain = create_app(conf, db=db)
    rows.append(("GET /metrics (placement series)",
                 *_time(lambda: len(_get(plain, "/metrics").body), args.repeat)))
    conf.set_override("capacity_flavors", FLAVORS, group="allotment")
    flavored = create_app(conf, db=db)
    rows.append((f"GET /metrics (+ headroom of {len(FLAVORS)} flavors)",
                 *_time(lambda: len(_get(flavored, "/metrics").body), args.repeat)))
    rows.extend(_after_start(conf, db, args.repeat))
    servers = itertools.count()

    def one_more_server() -> None:
        # A new instance on a flat host, as nova would claim it: the next
        # scrape counts that host's tree again, and only that one.
        n = next(servers)
        client.allocations.put(
            str(uuid.uuid4()), {http_bench._uuid(f"cn{3 * n + 1}"): {"resources": {
                "VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}},
            project_id=str(uuid.UUID(int=1)), user_id=str(uuid.UUID(int=2)),
            version="1.28")

    rows.append((f"GET /metrics (+ headroom of {len(FLAVORS)}, after 1 claim)",
                 *_time(lambda: len(_get(flavored, "/metrics").body), args.repeat,
                        before=one_more_server)))
    rows.append(("allotment hosts (client: read and sum)",
                 *_time(lambda: len(reports.host_list(client).hosts), args.repeat)))

    def cli_hosts() -> int:
        # The whole command against this process's service: parsing,
        # the read, the sums and the table.
        out = io.StringIO()
        with contextlib.redirect_stdout(out), mock.patch.object(
                cli_main, "make_client", lambda **_: contextlib.nullcontext(client)):
            code = cli_main.main(["--url", "http://unused", "--token", "admin", "hosts"])
        assert code == 0
        return len(out.getvalue())

    rows.append(("allotment hosts (whole command, table, in process)",
                 *_time(cli_hosts, args.repeat)))
    rows.append(("GET /ui (first page of hosts)",
                 *_time(lambda: len(_get(app, "/ui", accept="text/html").body), args.repeat)))
    rows.append(("GET /ui?sort=usage&class=VCPU",
                 *_time(lambda: len(_get(app, "/ui?sort=usage&class=VCPU",
                                         accept="text/html").body), args.repeat)))
    print(f"{'what':<52} {'median ms':>10} {'max ms':>9} {'CPU ms':>9} {'size':>10}")
    for name, median, worst, cpu, size in rows:
        print(f"{name:<52} {median:>10.1f} {worst:>9.1f} {cpu:>9.1f} {size:>10}")
    db.dispose()
    scratch.cleanup()


if __name__ == "__main__":
    main()
