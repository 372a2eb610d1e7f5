"""The scheduling mix against upstream Placement 16.0.0 and allotment.

Run: ``scripts/benchmark mix [--backends sqlite postgresql mysql] [--shapes
flat numa] [--hosts 1000 10000] [--schedulings 800] [--rounds 2]``.  For
each (backend, shape, size) every configuration gets a database of its own,
filled by SQL into upstream's schema (:mod:`fill`; allotment's copies are
then adopted with ``allotment-manage db sync``), and a server of its own
with the same number of gunicorn workers.  The rounds alternate between the
configurations (a different one first each round), so that whatever else
the machine does weighs on all alike.  A configuration is a service and its
``placement.conf``: upstream, allotment, allotment with upstream's own
``[placement] randomize_allocation_candidates = true``, and allotment with
``[allotment] rotate_allocation_candidates = true``.  Exits 1 when a
service's books do not hold (see :mod:`verify`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from benchmarks.side_by_side import cold, cpu, fill, flavors, mix, reporting, verify
from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.measure import distinct_mb, memory_mb
from benchmarks.side_by_side.mix_report import MixReport, MixSection, Start
from tests.harness import mysql, pg
from tests.harness.servers import _conf_text, start_allotment, start_upstream

ROOT = Path(__file__).resolve().parents[2]
RANDOMIZE = "[placement]\nrandomize_allocation_candidates = true\n"
ROTATE = "[allotment]\nrotate_allocation_candidates = true\n"
# name -> (service, extra placement.conf)
CONFIGS = {
    "upstream": ("upstream", ""),
    "allotment": ("allotment", ""),
    "allotment, randomized": ("allotment", RANDOMIZE),
    "allotment, rotating": ("allotment", ROTATE),
    "upstream, randomized": ("upstream", RANDOMIZE),
}
DEFAULT_CONFIGS = ["upstream", "allotment", "allotment, randomized"]


def _private_server(kind: str, stack: ExitStack) -> tuple[str, Path]:
    """A database server started for this run alone: (URL, its directory)."""
    datadir = Path(tempfile.mkdtemp(prefix=f"allotment-mix-{kind}."))
    stack.callback(shutil.rmtree, datadir, ignore_errors=True)  # after the stop below
    script = str(ROOT / "scripts" / ("pg-test-server" if kind == "pg" else "mysql-test-server"))
    url = subprocess.run([script, "start", str(datadir)], check=True, capture_output=True,
                         text=True).stdout.strip()
    stack.callback(subprocess.run, [script, "stop", str(datadir)], check=False)
    return url, datadir


class Backend:
    """Where a configuration's database lives, and who does its database work."""

    def __init__(self, kind: str, stack: ExitStack, workdir: Path) -> None:
        self.kind, self.stack, self.workdir = kind, stack, workdir
        self.server_url, self.datadir = None, None
        if kind == "postgresql":
            self.server_url = os.environ.get("ALLOTMENT_TEST_PG_URL")
            if not self.server_url:
                self.server_url, self.datadir = _private_server("pg", stack)
        elif kind == "mysql":
            # The server's own CPU time is the database's cost: it must serve
            # nothing but this run.
            self.server_url, self.datadir = _private_server("mysql", stack)

    def database(self, slug: str) -> str:
        if self.kind == "sqlite":
            return f"sqlite:///{self.workdir / slug}.sqlite"
        module = pg if self.kind == "postgresql" else mysql
        url = module.create_database(self.server_url, prefix=f"mix_{slug}")
        self.stack.callback(module.drop_database, url)
        return url

    def meter(self, database_url: str) -> cpu.Meter | None:
        if self.kind == "postgresql":
            return cpu.Meter(cpu.pg_backends(database_url))
        if self.kind == "mysql":
            return cpu.Meter(cpu.mysqld(self.datadir / "mysqld.pid"))
        return None


def _adopt(database_url: str, workdir: Path) -> float:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "manage.conf"
    config.write_text(_conf_text(database_url, ""))
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("allotment-manage")),
                    "--config-file", str(config), "db", "sync"],
                   check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def _client_factory(url: str, timeout: float):
    def make(version: str | None) -> Client:
        client = Client(url, timeout=timeout)
        if version:
            client.headers["OpenStack-API-Version"] = f"placement {version}"
        return client
    return make


def alone_scale(args, config: str) -> float:
    """The report rate (a share of hosts/period) of ``config``'s reports alone:
    its service's ``--report-alone-scale``, else ``--report-scale``."""
    return args.report_alone_scale.get(CONFIGS[config][0], args.report_scale)


def parse_scales(text: str) -> dict[str, float]:
    """``SERVICE=SCALE[,SERVICE=SCALE]``: upstream=0.1,allotment=1."""
    scales = {}
    for part in text.split(","):
        service, _, value = part.partition("=")
        if service.strip() not in ("upstream", "allotment") or not value:
            raise argparse.ArgumentTypeError(f"not SERVICE=SCALE: {part!r}")
        scales[service.strip()] = float(value)
    return scales


def _report_alone(reports: reporting.Reporting, server, backend: Backend,
                  database_url: str, args, scale: float) -> reporting.Stats:
    """The hosts' reports with nothing else running: their own cost per host-period."""
    stats = reporting.Stats()
    if scale != reports.scale:
        reports = reporting.Reporting(
            reports.roots, period=reports.period, scale=scale,
            change_share=reports.change_share, processes=reports.processes,
            seed=reports.seed)
    api, db = cpu.Meter(cpu.gunicorn_pids(server)), backend.meter(database_url)
    api.start()
    if db:
        db.start()
    reports.start(_client_factory(server.url, args.timeout), stats)
    time.sleep(args.report_alone)
    reports.stop()
    stats.api_cpu = api.stop()
    if db:
        stats.db_cpu = db.stop()
    return stats


def run_world(backend: Backend, shape: str, hosts: int, args,
              section: MixSection) -> None:
    world = flavors.world(shape, hosts)
    rows = fill.rows(world, args.consumers_per_host)
    menu = flavors.FLAVORS[shape]
    servers, urls = {}, {}
    for i, name in enumerate(args.configs):
        service, extra = CONFIGS[name]
        slug = f"{i}_{service}"
        urls[name] = backend.database(slug)
        section.fill[name] = fill.fill(urls[name], rows, backend.workdir / slug)
        if service == "allotment":
            section.adopt[name] = _adopt(urls[name], backend.workdir / slug)
        start = time.perf_counter()
        starter = start_upstream if service == "upstream" else start_allotment
        servers[name] = backend.stack.enter_context(starter(
            urls[name], backend.workdir / f"{slug}-server", workers=args.workers,
            extra_conf=extra))
        listening = time.perf_counter() - start
        status, body, first = Client(servers[name].url, timeout=args.timeout).request(
            "GET", menu[0].path)
        if status != 200:
            raise RuntimeError(f"{name}: first candidates answer {status}: {body[:300]!r}")
        section.starts[name] = Start(listening, first)
        if args.cold:
            fresh = cold.cold_start(servers[name], menu[0].path)
            section.starts[name].cold_seconds = fresh.seconds
            section.starts[name].cold_rss_mb = fresh.rss_mb
            section.starts[name].replaced_seconds = fresh.replaced_seconds
            section.starts[name].replaced_mb = fresh.replaced_mb
        print(f"   {name}: filled {section.fill[name]:.1f} s, listening {listening:.1f} s, "
              f"first answer {first * 1000:.0f} ms", file=sys.stderr, flush=True)
    roots = [tree[0].uuid for tree in world.trees]
    for name in args.configs:
        section.ledgers[name] = mix.Ledger()
        if args.reporters:
            section.reports[name] = reporting.Reporting(
                roots, period=args.report_period, scale=args.report_scale,
                change_share=args.report_changes, processes=args.reporters)
    section.report_rate = next(iter(section.reports.values())).rate if section.reports else 0.0
    section.moves = args.moves
    for r in range(args.rounds):
        order = args.configs[r % len(args.configs):] + args.configs[:r % len(args.configs)]
        for name in order:
            ledger, server = section.ledgers[name], servers[name]
            api = cpu.Meter(cpu.gunicorn_pids(server))
            db = backend.meter(urls[name])
            api.start()
            if db:
                db.start()
            seconds = mix.run(_client_factory(server.url, args.timeout), menu,
                              args.schedulings, ledger, threads=args.threads, seed=r,
                              processes=args.processes, move_share=args.moves,
                              reporting=section.reports.get(name))
            ledger.api_cpu += api.stop()
            if db:
                ledger.db_cpu = (ledger.db_cpu or 0.0) + db.stop()
            print(f"   round {r + 1}, {name}: {seconds:.1f} s, {ledger.scheduled} held "
                  f"so far, {ledger.conflicts} conflicts", file=sys.stderr, flush=True)
    if args.reporters and args.report_alone > 0:
        for name in args.configs:
            section.alone[name] = _report_alone(section.reports[name], servers[name],
                                                backend, urls[name], args,
                                                alone_scale(args, name))
    for name in args.configs:
        ledger = section.ledgers[name]
        # At 1.9 the usages are one sum, not split by consumer type.
        usages = _client_factory(servers[name].url, args.timeout)("1.9").call(
            "GET", f"/usages?project_id={mix.PROJECT}")["usages"]
        books = verify.read(urls[name], mix.PROJECT, usages)
        section.verdicts[name] = verify.check(books, ledger.granted, ledger.deleted)
        memory = [memory_mb(pid) for pid in servers[name].pids]
        section.starts[name].memory_mb = memory
        section.starts[name].once_mb = distinct_mb(servers[name].pids)
        section.starts[name].rss_mb = [rss for rss, _, _ in memory[1:]]  # the workers'
    for server in servers.values():
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/benchmark mix")
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"],
                        choices=["sqlite", "postgresql", "mysql"])
    parser.add_argument("--shapes", nargs="+", default=["flat", "numa"],
                        choices=list(flavors.FLAVORS))
    parser.add_argument("--hosts", nargs="+", type=int, default=[1000])
    parser.add_argument("--schedulings", type=int, default=800,
                        help="instances each configuration schedules per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="schedulers at once")
    parser.add_argument("--scheduler-threads", dest="processes", action="store_false",
                        help="run the schedulers as threads of one process, not as "
                             "processes of their own")
    parser.add_argument("--moves", type=float, default=0.1,
                        help="share of the schedulings that move (resize or migrate) an "
                             "instance already placed instead")
    parser.add_argument("--reporters", type=int, default=2,
                        help="processes making the hosts' periodic reports (0: none)")
    parser.add_argument("--report-period", type=float, default=60.0,
                        help="seconds between two reports of one host (nova's "
                             "update_resources_interval)")
    parser.add_argument("--report-scale", type=float, default=1.0,
                        help="the hosts' report rate as a share of hosts/period")
    parser.add_argument("--report-changes", type=float, default=0.05,
                        help="share of host-periods whose inventory changes")
    parser.add_argument("--report-alone", type=float, default=15.0,
                        help="seconds of the reports alone after the rounds, for their "
                             "own CPU per host-period (0: skip)")
    parser.add_argument("--report-alone-scale", type=parse_scales, default={},
                        metavar="SERVICE=SCALE[,SERVICE=SCALE]",
                        help="the reports alone at another rate per service (a share of "
                             "hosts/period; default --report-scale), e.g. allotment=1 "
                             "for nova's own rate where upstream keeps a scaled one")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--consumers-per-host", type=int, default=10,
                        help="consumers the SQL fill gives every host before the rounds")
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS,
                        choices=list(CONFIGS))
    parser.add_argument("--no-cold", dest="cold", action="store_false",
                        help="skip starting one more worker cold on each configuration")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--output", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    out = MixReport(" ".join(["scripts/benchmark mix",
                              *(argv if argv is not None else sys.argv[1:])]))
    for kind in args.backends:
        for shape in args.shapes:
            for hosts in args.hosts:
                world = flavors.world(shape, hosts)
                kind_of_scheduler = "processes" if args.processes else "threads"
                rounds = f"{args.rounds} round{'' if args.rounds == 1 else 's'}"
                title = (f"{kind}, {shape}, {hosts} hosts ({world.providers} providers, "
                         f"{hosts * args.consumers_per_host} consumers before the rounds), "
                         f"{rounds} of {args.schedulings} schedulings by "
                         f"{args.threads} schedulers ({kind_of_scheduler}), "
                         f"{args.workers} workers each")
                print(f"== {title}", file=sys.stderr, flush=True)
                with ExitStack() as stack:
                    workdir = Path(stack.enter_context(
                        tempfile.TemporaryDirectory(prefix="mix.")))
                    run_world(Backend(kind, stack, workdir), shape, hosts, args,
                              out.section(title))
    text = out.render()
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0 if out.ok else 1


if __name__ == "__main__":
    sys.exit(main())
