"""Measurements that compare the two services.

Reads are measured alternately (one request to each service in turn,
starting with a different one each round), so that whatever else the
machine is doing weighs on both alike.  Writes (churn, claims) change the
service they go to, so they run against one service at a time.
"""

from __future__ import annotations

import json
import mmap
import random
import statistics
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field

from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.worlds import World


@dataclass
class Timing:
    samples: list[float] = field(default_factory=list)
    answer_size: int | None = None  # candidates or providers in the answer
    timed_out: bool = False

    @property
    def p50(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


def _size(body: bytes) -> int | None:
    doc = json.loads(body)
    for key in ("allocation_requests", "resource_providers"):
        if key in doc:
            return len(doc[key])
    return None


def alternate(clients: dict[str, Client], path: str, repeat: int,
              budget: float, fill: float = 0.0, most: int = 101) -> dict[str, Timing]:
    """Up to ``repeat`` samples per service, within ``budget`` seconds each.

    A fast scenario goes on past ``repeat`` rounds, up to ``most``, while
    all services together have spent less than ``fill`` seconds on it: the
    median of a millisecond answer moves by tenths of a millisecond from
    one handful of samples to the next, and more of them cost little.
    """
    timings = {name: Timing() for name in clients}
    spent = dict.fromkeys(clients, 0.0)
    names = list(clients)
    for i in range(max(repeat, most)):
        if i >= repeat and sum(spent.values()) >= fill:
            break
        order = names if i % 2 == 0 else names[::-1]
        active = [n for n in order if not timings[n].timed_out and spent[n] < budget]
        if not active:
            break
        for name in active:
            client = clients[name]
            try:
                status, body, seconds = client.request("GET", path)
            except TimeoutError:
                timings[name].timed_out = True
                continue
            if status != 200:
                raise RuntimeError(f"{name} GET {path} -> {status}: {body[:300]!r}")
            timings[name].samples.append(seconds)
            timings[name].answer_size = _size(body)
            spent[name] += seconds
    return timings


def _topology_write(client: Client, world: World, rng: random.Random) -> None:
    """One host's inventory rewritten, as a compute host's periodic update does."""
    root = world.root(rng.randrange(world.hosts))
    path = f"/resource_providers/{root}/inventories"
    doc = client.call("GET", path)
    inventories = doc["inventories"]
    for fields in inventories.values():
        # Alternate the reserved amount so every write is a real change.
        fields["reserved"] = 1 if fields.get("reserved", 0) == 0 else 0
    client.request("PUT", path, {"resource_provider_generation":
                                 doc["resource_provider_generation"],
                                 "inventories": inventories})


def under_churn(client: Client, world: World, path: str, seconds: float,
                interval: float = 0.1) -> tuple[Timing, int]:
    """Query ``path`` while another thread writes one host every ``interval``."""
    stop = threading.Event()
    writes = [0]

    def writer() -> None:
        rng = random.Random(7)
        writer_client = Client(f"http://{client.host}:{client.port}")
        while not stop.is_set():
            started = time.perf_counter()
            _topology_write(writer_client, world, rng)
            writes[0] += 1
            stop.wait(max(0.0, interval - (time.perf_counter() - started)))

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    timing = Timing()
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            status, _, took = client.request("GET", path)
            if status != 200:
                raise RuntimeError(f"GET {path} -> {status} under churn")
            timing.samples.append(took)
    finally:
        stop.set()
        thread.join()
    return timing, writes[0]


def first_after_write(client: Client, world: World, path: str, rounds: int) -> Timing:
    """The first answer after one host's inventory changed."""
    rng = random.Random(11)
    timing = Timing()
    for _ in range(rounds):
        _topology_write(client, world, rng)
        status, _, took = client.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path} -> {status} after a write")
        timing.samples.append(took)
    return timing


@dataclass
class Claims:
    made: int
    conflicts: int
    errors: int
    seconds: float
    over_allocated: list[str]
    vcpu_used: int

    @property
    def rate(self) -> float:
        return self.made / self.seconds


def claims(client: Client, world: World, seconds: float, threads: int = 8) -> Claims:
    """Schedulers claiming servers: candidates (limit=10), then PUT one of them.

    Each claim asks for one VCPU, so at the end the VCPU used in the whole
    world must equal the claims the clients were told succeeded, and no
    inventory may be used past its capacity.
    """
    made, conflicts, errors = [0] * threads, [0] * threads, [0] * threads
    deadline = time.perf_counter() + seconds

    def worker(i: int) -> None:
        rng = random.Random(i)
        while time.perf_counter() < deadline:
            status, body, _ = client.request("GET", "/allocation_candidates?" + world.claim)
            if status != 200:
                errors[i] += 1
                continue
            doc = json.loads(body)
            if not doc["allocation_requests"]:
                return
            choice = rng.choice(doc["allocation_requests"])
            status, body, _ = client.request(
                "PUT", f"/allocations/{uuid.uuid4()}",
                {"allocations": choice["allocations"], "project_id": "bench",
                 "user_id": "bench", "consumer_generation": None,
                 "consumer_type": "INSTANCE"})
            if status == 204:
                made[i] += 1
            elif status == 409:
                conflicts[i] += 1
            else:
                # A refused claim that is not a conflict (upstream on SQLite
                # answers 500 'database is locked' under concurrent writers).
                errors[i] += 1

    start = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - start
    over, vcpu = _capacity_check(client, world)
    return Claims(sum(made), sum(conflicts), sum(errors), elapsed, over, vcpu)


def _capacity_check(client: Client, world: World) -> tuple[list[str], int]:
    over, vcpu = [], 0
    for tree in world.trees:
        for p in tree:
            usages = client.call("GET", f"/resource_providers/{p.uuid}/usages")["usages"]
            if not any(usages.values()):
                continue
            inventories = client.call(
                "GET", f"/resource_providers/{p.uuid}/inventories")["inventories"]
            vcpu += usages.get("VCPU", 0)
            for rc, used in usages.items():
                inv = inventories[rc]
                if used > (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]:
                    over.append(f"{p.name} {rc} {used}")
    return over, vcpu


_PAGE = mmap.PAGESIZE
_PFN_MASK = (1 << 55) - 1


def memory_mb(pid: int) -> tuple[float, float, float]:
    """RSS, PSS and USS of ``pid`` in MB (/proc/PID/smaps_rollup): resident,
    shared pages divided among their sharers, and the process's own."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return fields.get("Rss", 0) / 1024, fields.get("Pss", 0) / 1024, uss / 1024


def distinct_mb(pids: list[int]) -> float | None:
    """The pages ``pids`` map, each counted once however many map it, in MB
    (from /proc/PID/pagemap; None without the right to read page frames):
    what a cgroup holding just these processes would be charged for their
    mappings, without the page cache nobody maps and the kernel's own."""
    frames: set[int] = set()
    for pid in pids:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if line.rstrip().endswith("[vsyscall]"):
                    continue
                pagemap.seek(start // _PAGE * 8)
                data = pagemap.read((end - start) // _PAGE * 8)
                for (entry,) in struct.iter_unpack("<Q", data):
                    if entry >> 63:  # present
                        frames.add(entry & _PFN_MASK)
    if frames <= {0}:
        return None
    return len(frames) * _PAGE / 2**20


def worker_rss_mb(pids: list[int]) -> list[float]:
    """Resident memory of each worker (the master, first, left out)."""
    sizes = []
    for pid in pids[1:]:
        try:
            sizes.append(memory_mb(pid)[0])
        except FileNotFoundError:
            continue
    return sizes
