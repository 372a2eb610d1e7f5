"""The faults, each injected while clients run, held for a while and
healed as an operator would heal it.  Each returns the database crashes it
caused (for the checker's accounting of lost commits)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.faults.lab.checker import Crash, feed_head
from tests.faults.lab.lab import Lab
from tests.faults.lab.net import Skipped

Inject = Callable[[Lab, float], list[Crash]]


@dataclass(frozen=True)
class Fault:
    name: str
    cls: str          # partition | latency | pause | crash
    backends: tuple[str, ...]
    inject: Inject
    about: str


def _hold(seconds: float) -> None:
    time.sleep(seconds)


def _writer(lab: Lab):
    return lab.db_hosts()[0]


# -- partitions --------------------------------------------------------------------

def writer_isolated(lab: Lab, hold: float) -> list[Crash]:
    writer, *others = lab.db_hosts()
    with lab.network.partition(writer, others):
        _hold(hold)
    if lab.galera is not None:
        lab.galera.wait_synced(lab.galera.nodes[0])
    return []


def writer_from_haproxy(lab: Lab, hold: float) -> list[Crash]:
    with lab.network.partition(_writer(lab), [lab.proxy_host]):
        _hold(hold)
    return []


def api_host_from_database(lab: Lab, hold: float) -> list[Crash]:
    with lab.network.partition(lab.apis[0].host, [lab.proxy_host], direction="out",
                               port=lab.db_port):
        _hold(hold)
    return []


def one_way(lab: Lab, hold: float) -> list[Crash]:
    """The writer hears nothing from the others; they still hear it."""
    writer, *others = lab.db_hosts()
    with lab.network.partition(writer, others, direction="in"):
        _hold(hold)
    if lab.galera is not None:
        lab.galera.wait_synced(lab.galera.nodes[0])
    return []


# -- latency and loss ------------------------------------------------------------------

def slow_writer(lab: Lab, hold: float) -> list[Crash]:
    with lab.network.netem(_writer(lab), "delay 150ms 50ms loss 3%"):
        _hold(hold)
    return []


# -- pauses ----------------------------------------------------------------------------

def pause_writer(lab: Lab, hold: float) -> list[Crash]:
    if lab.galera is not None:
        node = lab.galera.nodes[0]
        lab.galera.pause(node)
        try:
            _hold(hold)
        finally:
            lab.galera.resume(node)
        lab.galera.wait_synced(node)
    else:
        lab.pg.pause(lab.pg.writer())
        try:
            _hold(hold)
        finally:
            lab.pg.resume(lab.pg.writer())
    return []


def pause_api_worker(lab: Lab, hold: float) -> list[Crash]:
    pid = lab.apis[0].worker_pids()[0]
    os.kill(pid, signal.SIGSTOP)
    try:
        _hold(hold)
    finally:
        os.kill(pid, signal.SIGCONT)
    return []


# -- crashes ---------------------------------------------------------------------------

def crash_one_node(lab: Lab, hold: float) -> list[Crash]:
    """kill -9 of the writer; it rejoins by IST after ``hold``."""
    node = lab.galera.nodes[0]
    lab.galera.kill(node)
    _hold(hold)
    lab.galera.restart(node)
    return []


def crash_all_nodes(lab: Lab, hold: float) -> list[Crash]:
    """Every Galera node killed -9 within a second, then the operator's
    recovery: bootstrap from the most advanced node."""
    engine = lab.truth()
    before = feed_head(engine)
    sampled = time.time()
    spread = lab.galera.kill_all()
    at = time.time()
    assert spread < 1.0, f"the nodes died {spread:.2f} s apart"
    _hold(hold)
    after: list[int] = []
    back = time.time()  # no node runs before this
    # The feed's last id as recovered, read before haproxy (2 checks 2 s
    # apart) lets any client write to the bootstrapped node.
    lab.galera.recover_all(lambda node: after.append(feed_head(lab.truth())))
    return [Crash(at, before, after[0], sampled, back)]


def crash_primary_and_promote(lab: Lab, hold: float) -> list[Crash]:
    """kill -9 of the PostgreSQL primary (and its backends), the replica
    promoted; haproxy's check then sends the API to it."""
    engine = lab.truth()
    before = feed_head(engine)
    sampled = time.time()
    lab.pg.crash(lab.pg.primary)
    at = time.time()
    _hold(hold)
    back = time.time()  # the replica takes no write before its promotion
    lab.pg.promote()
    crash = Crash(at, before, feed_head(lab.truth()), sampled, back)
    lab.pg.rebuild_replica()
    return [crash]


def crash_api_worker(lab: Lab, hold: float) -> list[Crash]:
    """kill -9 of an API worker while requests are in flight; gunicorn
    forks another."""
    api = lab.apis[0]
    pid = api.worker_pids()[0]
    os.kill(pid, signal.SIGKILL)
    _hold(hold)
    deadline = time.monotonic() + 30
    while len(api.worker_pids()) < api.workers and time.monotonic() < deadline:
        time.sleep(0.2)
    return []


BOTH = ("galera", "postgres")
FAULTS = [
    Fault("writer-isolated", "partition", BOTH, writer_isolated,
          "the writer cut off from the other database nodes"),
    Fault("writer-from-haproxy", "partition", BOTH, writer_from_haproxy,
          "haproxy cannot reach the writer"),
    Fault("api-host-from-database", "partition", BOTH, api_host_from_database,
          "API host 1 cannot reach the database"),
    Fault("one-way", "partition", BOTH, one_way,
          "the writer receives nothing from the other nodes (they still hear it)"),
    Fault("slow-writer", "latency", BOTH, slow_writer,
          "150 ms +- 50 ms latency and 3 % loss on the writer"),
    Fault("pause-writer", "pause", BOTH, pause_writer,
          "SIGSTOP of the writing database server"),
    Fault("pause-api-worker", "pause", BOTH, pause_api_worker,
          "SIGSTOP of one API worker"),
    Fault("crash-node", "crash", ("galera",), crash_one_node,
          "kill -9 of the writer node; restarted, it rejoins by IST"),
    Fault("crash-all-nodes", "crash", ("galera",), crash_all_nodes,
          "kill -9 of all three nodes within 1 s; bootstrap from the most advanced"),
    Fault("crash-primary", "crash", ("postgres",), crash_primary_and_promote,
          "kill -9 of the primary; the replica promoted"),
    Fault("crash-api-worker", "crash", BOTH, crash_api_worker,
          "kill -9 of an API worker mid-request"),
]
BY_NAME = {f.name: f for f in FAULTS}

__all__ = ["BY_NAME", "FAULTS", "Fault", "Skipped"]
