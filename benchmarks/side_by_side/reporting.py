"""Every host's periodic report, as nova 34's compute service makes it.

Once a period (``update_available_resource``, every 60 s by default) each
host's resource tracker:

- reads what is allocated against its compute node
  (``GET /resource_providers/{root}/allocations``, no microversion: 1.0);
- every ``resource_provider_association_refresh`` (300 s: every fifth
  period, the hosts staggered over them) re-reads its tree
  (``GET /resource_providers?in_tree=`` at 1.14) and, for every provider in
  it, the inventories (1.0), aggregates (1.19) and traits (1.6), and the
  sharing providers of those aggregates (``member_of=in:…&required=
  MISC_SHARES_VIA_AGGREGATE`` at 1.18, with their own inventories,
  aggregates and traits);
- writes what changed: on a share of the host-periods the root's disk
  changes (its ``DISK_GB`` total by one), and the report client puts the
  inventory (``PUT …/inventories`` at 1.26) with the provider generation it
  last read.  Claims bump that generation, so the write often meets a 409;
  nova then drops its cache of the tree, reads it all again and retries,
  four attempts in all (``_update_to_placement``'s retry), and so does
  this one.

A real cloud's hosts report at ``hosts / period`` host-periods a second.
Upstream cannot always keep up with that on this machine while schedulers
run, so the rate is scaled (``scale``) and the report says by how much, and
how many of the due host-periods were made in the round's time.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.side_by_side.client import Client

REFRESH_EVERY = 5  # periods: resource_provider_association_refresh / period
WRITE_ATTEMPTS = 4
CHANGED_CLASS = "DISK_GB"


@dataclass
class Stats:
    """What the reporters did and met, over one or more stretches."""

    requests: list[float] = field(default_factory=list)  # seconds, every request
    host_periods: int = 0
    due: float = 0.0  # host-periods the scaled rate asked for in the time
    refreshes: int = 0  # trees read again
    writes: int = 0  # inventories changed
    conflicts: int = 0  # 409s on those writes
    failed_writes: int = 0  # changes still refused after the attempts
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    api_cpu: float = 0.0
    db_cpu: float | None = None

    def add(self, other: dict) -> None:
        for name, value in other.items():
            if name == "errors":
                self.errors.extend(value[: max(0, 20 - len(self.errors))])
            else:
                setattr(self, name, getattr(self, name) + value)


class _Host:
    """One host's report client: its cached tree, as nova's ProviderTree."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.inventories: dict | None = None  # the root's, as last read
        self.generation: int | None = None  # the root's, as last read or written


class _Reporter:
    def __init__(self, make_client, stats: Stats, seed: int) -> None:
        self.c = {v: make_client(v) for v in ("1.0", "1.6", "1.14", "1.18", "1.19", "1.26")}
        self.stats = stats
        self.rng = random.Random(seed)

    def _get(self, version: str, path: str) -> dict | None:
        status, body, took = self.c[version].request("GET", path)
        self.stats.requests.append(took)
        if status != 200:
            if len(self.stats.errors) < 20:
                self.stats.errors.append(f"GET {path.split('?')[0]} {status}: "
                                         f"{body[:160].decode(errors='replace')}")
            return None
        return json.loads(body)

    def _associations(self, uuid: str, sharing: bool) -> dict | None:
        inventories = self._get("1.0", f"/resource_providers/{uuid}/inventories")
        aggregates = self._get("1.19", f"/resource_providers/{uuid}/aggregates")
        self._get("1.6", f"/resource_providers/{uuid}/traits")
        if sharing and aggregates and aggregates["aggregates"]:
            shared = self._get("1.18", "/resource_providers?member_of=in:"
                               + ",".join(aggregates["aggregates"])
                               + "&required=MISC_SHARES_VIA_AGGREGATE")
            for rp in (shared or {}).get("resource_providers", []):
                self._associations(rp["uuid"], sharing=False)
        return inventories

    def refresh(self, host: _Host) -> None:
        self.stats.refreshes += 1
        tree = self._get("1.14", f"/resource_providers?in_tree={host.root}")
        if tree is None:
            return
        for rp in tree["resource_providers"]:
            inventories = self._associations(rp["uuid"], sharing=True)
            if rp["uuid"] == host.root and inventories is not None:
                host.inventories = inventories["inventories"]
                host.generation = inventories["resource_provider_generation"]

    def change_inventory(self, host: _Host) -> None:
        """The root's disk grows or shrinks by one, written as nova writes it."""
        if host.inventories is None:
            self.refresh(host)
        if host.inventories is None or CHANGED_CLASS not in host.inventories:
            return
        record = dict(host.inventories[CHANGED_CLASS])
        old = record["total"]
        record["total"] = old + 1 if old % 2 == 0 else old - 1
        if record.get("max_unit") == old:
            record["max_unit"] = record["total"]
        inventories = {**host.inventories, CHANGED_CLASS: record}
        for attempt in range(WRITE_ATTEMPTS):
            if attempt:  # nova's retry: the whole tree read again
                self.refresh(host)
            body = {"resource_provider_generation": host.generation,
                    "inventories": inventories}
            status, answer, took = self.c["1.26"].request(
                "PUT", f"/resource_providers/{host.root}/inventories", body)
            self.stats.requests.append(took)
            if status == 200:
                written = json.loads(answer)
                host.inventories = written["inventories"]
                host.generation = written["resource_provider_generation"]
                self.stats.writes += 1
                return
            if status != 409:
                if len(self.stats.errors) < 20:
                    self.stats.errors.append(f"PUT inventories {status}: "
                                             f"{answer[:160].decode(errors='replace')}")
                return
            self.stats.conflicts += 1
            host.inventories = None
        self.stats.failed_writes += 1

    def period(self, host: _Host, number: int, position: int, change_share: float) -> None:
        self._get("1.0", f"/resource_providers/{host.root}/allocations")
        if (number + position) % REFRESH_EVERY == 0:
            self.refresh(host)
        if self.rng.random() < change_share:
            self.change_inventory(host)
        self.stats.host_periods += 1


def _reporter_main(i: int, make_client, roots: list[tuple[int, str]], rate: float,
                   change_share: float, seed: int, stop, conn) -> None:
    """One reporter: its hosts' periods at ``rate`` a second until ``stop``."""
    stats = Stats()
    reporter = _Reporter(make_client, stats, seed * 1000 + i)
    hosts = [_Host(root) for _, root in roots]
    start = time.perf_counter()
    k = 0
    try:
        while not stop.is_set() and hosts:
            wait = start + k / rate - time.perf_counter()
            if wait > 0 and stop.wait(wait):
                break
            n = k % len(hosts)
            reporter.period(hosts[n], k // len(hosts), roots[n][0], change_share)
            k += 1
    except Exception as exc:  # the counts must still come home
        stats.errors.append(f"reporter {i}: {exc!r}")
    stats.seconds = time.perf_counter() - start
    stats.due = 1 + int(stats.seconds * rate)  # the first is due at once
    conn.send({name: getattr(stats, name) for name in (
        "requests", "host_periods", "due", "refreshes", "writes", "conflicts",
        "failed_writes", "errors")} | {"seconds": stats.seconds})
    conn.close()


class Reporting:
    """The hosts' reports of one configuration, run in ``processes`` processes."""

    def __init__(self, roots: list[str], period: float = 60.0, scale: float = 1.0,
                 change_share: float = 0.05, processes: int = 2, seed: int = 0) -> None:
        self.roots, self.period, self.scale = roots, period, scale
        self.change_share, self.processes, self.seed = change_share, processes, seed
        self.stats = Stats()
        self._running: list = []
        self._stop = None

    @property
    def rate(self) -> float:
        """Host-periods a second asked for: every host once a period, scaled."""
        return len(self.roots) / self.period * self.scale

    def start(self, make_client: Callable[[str | None], Client],
              stats: Stats | None = None) -> None:
        """The reporters, from now until :meth:`stop`; their counts go to
        ``stats`` (default: this configuration's, over its rounds)."""
        context = multiprocessing.get_context("fork")
        self._stop = context.Event()
        self._into = stats or self.stats
        numbered = list(enumerate(self.roots))
        self._running = []
        for i in range(self.processes):
            ours, theirs = context.Pipe(duplex=False)
            child = context.Process(target=_reporter_main, args=(
                i, make_client, numbered[i::self.processes], self.rate / self.processes,
                self.change_share, self.seed, self._stop, theirs), daemon=True)
            child.start()
            theirs.close()
            self._running.append((child, ours))
        self.seed += 1

    def stop(self) -> None:
        self._stop.set()
        seconds = 0.0
        for child, conn in self._running:
            done = conn.recv()
            child.join()
            seconds = max(seconds, done.pop("seconds"))
            self._into.add(done)
        self._into.seconds += seconds
        self._running = []
