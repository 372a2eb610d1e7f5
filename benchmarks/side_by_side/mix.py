"""The scheduling mix: schedulers placing instances the way nova does.

Each scheduler, for every instance: picks a flavor, asks for
candidates (``GET /allocation_candidates`` with nova's
``root_required=!COMPUTE_STATUS_DISABLED&limit=1000``), picks one of the
first 10 candidates (as nova's weighers leave a few best hosts to choose
from), claims it with ``PUT /allocations/{new consumer}`` at microversion
1.36, and on a 409 asks again and retries; 30% of the time it then deletes
a random earlier instance.  The :class:`Ledger` keeps the books the
verification compares the service's with.

The schedulers are processes of their own by default, as nova's are: as
threads of one process, eight schedulers parse their 2 MB answers under one
interpreter lock, and an answer that has arrived waits for the lock before
its time is taken, which measures the client rather than the service.  A
scheduler process deletes one of the instances it was given a share of or
placed itself.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field

from benchmarks.side_by_side import moves
from benchmarks.side_by_side.flavors import Flavor

PROJECT = "bench-mix"
USER = "bench-mix"
CLAIM_VERSION = "1.36"
ATTEMPTS = 5  # candidates asked for per instance before giving it up
FIRST = 10  # the candidates a scheduler chooses among
DELETE_SHARE = 0.3


def percentiles(samples: list[float]) -> tuple[float, float, float] | None:
    """(p50, p95, p99) of ``samples``; None without any."""
    if not samples:
        return None
    if len(samples) == 1:
        return samples[0], samples[0], samples[0]
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return statistics.median(samples), cuts[94], cuts[98]


@dataclass
class Ledger:
    """Everything one service was asked and told over the rounds."""

    granted: dict[str, dict] = field(default_factory=dict)  # consumer -> allocations
    deleted: set[str] = field(default_factory=set)
    live: list[str] = field(default_factory=list)  # granted, not yet picked for deletion
    gets: list[float] = field(default_factory=list)
    puts: list[float] = field(default_factory=list)
    deletes: list[float] = field(default_factory=list)
    conflicts: int = 0
    no_room: int = 0  # an instance for which no candidate was left
    gave_up: int = 0  # an instance still refused after ATTEMPTS tries
    errors: list[str] = field(default_factory=list)
    # Moves (see :mod:`moves`): the flavor each instance was placed with,
    # every request a move made, and how the moves ended.
    flavor_of: dict[str, str] = field(default_factory=dict)
    move_requests: list[float] = field(default_factory=list)
    move_conflicts: int = 0
    move_no_room: int = 0
    move_stuck: int = 0
    confirmed: int = 0
    reverted: int = 0
    project: str = PROJECT
    user: str = USER
    seconds: float = 0.0  # wall time of the rounds
    api_cpu: float = 0.0
    db_cpu: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def scheduled(self) -> int:
        return len(self.granted)

    @property
    def rate(self) -> float:
        return self.scheduled / self.seconds if self.seconds else 0.0

    @property
    def conflict_rate(self) -> float:
        return self.conflicts / len(self.puts) if self.puts else 0.0

    def grant(self, consumer: str, allocations: dict, flavor: str | None = None) -> None:
        with self.lock:
            self.granted[consumer] = allocations
            self.live.append(consumer)
            if flavor is not None:
                self.flavor_of[consumer] = flavor

    def pick_to_move(self, rng: random.Random) -> str | None:
        """A live instance of a known flavor, out of ``live`` until :meth:`put_back`."""
        with self.lock:
            for _ in range(8):
                if not self.live:
                    return None
                i = rng.randrange(len(self.live))
                if self.live[i] in self.flavor_of:
                    self.live[i], self.live[-1] = self.live[-1], self.live[i]
                    return self.live.pop()
            return None

    def put_back(self, consumer: str) -> None:
        with self.lock:
            self.live.append(consumer)

    def moved(self, consumer: str, allocations: dict, confirmed: bool) -> None:
        with self.lock:
            self.granted[consumer] = allocations
            if confirmed:
                self.confirmed += 1
            else:
                self.reverted += 1

    def pick_to_delete(self, rng: random.Random) -> str | None:
        with self.lock:
            if not self.live:
                return None
            i = rng.randrange(len(self.live))
            self.live[i], self.live[-1] = self.live[-1], self.live[i]
            return self.live.pop()

    def note(self, what: str, error: str | None = None, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)
            if error is not None and len(self.errors) < 20:
                self.errors.append(what + ": " + error)


def _claim_body(allocations: dict) -> dict:
    return {"allocations": allocations, "project_id": PROJECT, "user_id": USER,
            "consumer_generation": None}


def schedule_one(client, claimer, flavor: Flavor, ledger: Ledger,
                 rng: random.Random) -> None:
    """Place one instance of ``flavor``; the outcome goes to ``ledger``."""
    consumer = str(uuid.uuid4())
    for _ in range(ATTEMPTS):
        status, body, took = client.request("GET", flavor.path)
        ledger.gets.append(took)
        if status != 200:
            ledger.note(f"GET {flavor.name} {status}", body[:200].decode(errors="replace"))
            return
        candidates = json.loads(body)["allocation_requests"][:FIRST]
        if not candidates:
            ledger.note("no room", no_room=1)
            return
        allocations = rng.choice(candidates)["allocations"]
        status, body, took = claimer.request("PUT", f"/allocations/{consumer}",
                                             _claim_body(allocations))
        ledger.puts.append(took)
        if status == 204:
            ledger.grant(consumer, allocations, flavor.name)
            return
        if status != 409:
            ledger.note(f"PUT {status}", body[:200].decode(errors="replace"))
            return
        ledger.note("409", conflicts=1)
    ledger.note("gave up", gave_up=1)


def delete_one(claimer, ledger: Ledger, rng: random.Random) -> None:
    consumer = ledger.pick_to_delete(rng)
    if consumer is None:
        return
    status, body, took = claimer.request("DELETE", f"/allocations/{consumer}")
    ledger.deletes.append(took)
    if status == 204:
        with ledger.lock:
            ledger.deleted.add(consumer)
    else:
        # Not deleted: the service still holds it, and so do the books.
        with ledger.lock:
            ledger.live.append(consumer)
        ledger.note(f"DELETE {status}", body[:200].decode(errors="replace"))


def _scheduler(i: int, make_client, flavors: tuple[Flavor, ...], ledger: Ledger,
               seed: int, take, move_share: float = 0.0) -> None:
    """One scheduler: instances until ``take()`` says none are left.

    A ``move_share`` of them is a move of an instance already placed
    instead of a new one (:mod:`moves`).
    """
    rng = random.Random(seed * 1000 + i)
    client, claimer = make_client(None), make_client(CLAIM_VERSION)
    mover = make_client(moves.MOVE_VERSION) if move_share else None
    by_name = {f.name: f for f in flavors}
    while take():
        if mover and rng.random() < move_share and moves.move_one(
                client, claimer, mover, by_name, ledger, rng, ATTEMPTS):
            continue
        schedule_one(client, claimer, rng.choice(flavors), ledger, rng)
        if rng.random() < DELETE_SHARE:
            delete_one(claimer, ledger, rng)


def _in_threads(make_client, flavors, count: int, ledger: Ledger, threads: int,
                seed: int, move_share: float) -> None:
    remaining = [count]
    lock = threading.Lock()

    def take() -> bool:
        with lock:
            remaining[0] -= 1
            return remaining[0] >= 0

    pool = [threading.Thread(target=_scheduler, args=(i, make_client, flavors, ledger,
                                                       seed, take, move_share))
            for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


_SHARED = ("granted", "deleted", "live", "gets", "puts", "deletes", "conflicts", "no_room",
           "gave_up", "errors", "flavor_of", "move_requests", "move_conflicts",
           "move_no_room", "move_stuck", "confirmed", "reverted")


def _process_main(i, make_client, flavors, seed, remaining, live, known, move_share,
                  conn) -> None:
    def take() -> bool:
        with remaining.get_lock():
            remaining.value -= 1
            return remaining.value >= 0

    # What the parent knew of this share's instances: their allocations
    # and flavors, which a move needs.
    own = Ledger(live=live, granted={c: known.granted[c] for c in live},
                 flavor_of={c: known.flavor_of[c] for c in live if c in known.flavor_of})
    try:
        _scheduler(i, make_client, flavors, own, seed, take, move_share)
    except Exception as exc:  # the books must still come home
        own.errors.append(f"scheduler {i}: {exc!r}")
    conn.send({name: getattr(own, name) for name in _SHARED})
    conn.close()


def _in_processes(make_client, flavors, count: int, ledger: Ledger, processes: int,
                  seed: int, move_share: float) -> None:
    context = multiprocessing.get_context("fork")
    remaining = context.Value("i", count)
    children = []
    # Each scheduler may delete or move its share of the instances placed so far.
    with ledger.lock:
        shares = [ledger.live[i::processes] for i in range(processes)]
        ledger.live.clear()
    for i in range(processes):
        ours, theirs = context.Pipe(duplex=False)
        child = context.Process(target=_process_main,
                                args=(i, make_client, flavors, seed, remaining, shares[i],
                                      ledger, move_share, theirs),
                                # A run interrupted does not wait for its schedulers.
                                daemon=True)
        child.start()
        theirs.close()
        children.append((child, ours))
    for child, conn in children:
        books = conn.recv()
        child.join()
        with ledger.lock:
            ledger.granted.update(books.pop("granted"))
            ledger.flavor_of.update(books.pop("flavor_of"))
            ledger.deleted |= books.pop("deleted")
            for name, value in books.items():  # lists extend, counts add up
                setattr(ledger, name, getattr(ledger, name) + value)


def run(make_client, flavors: tuple[Flavor, ...], count: int, ledger: Ledger,
        threads: int = 8, seed: int = 0, processes: bool = False,
        move_share: float = 0.0, reporting=None) -> float:
    """``count`` schedulings by ``threads`` schedulers; wall seconds.

    ``make_client(version)`` gives a client speaking that microversion (one
    per scheduler, for candidates at the newest and claims at 1.36).  With
    ``processes`` every scheduler is a process of its own (forked, so
    ``make_client`` need not be picklable) and deletes or moves only
    instances from its share of those placed before the round and those it
    placed itself; its books are merged into ``ledger`` when it ends.  A
    ``move_share`` of the schedulings moves an instance instead.  With
    ``reporting`` (a :class:`reporting.Reporting`) the hosts' periodic
    reports run alongside, from the schedulers' start to their end.
    """
    if reporting is not None:
        reporting.start(make_client)
    start = time.perf_counter()
    try:
        if processes:
            _in_processes(make_client, flavors, count, ledger, threads, seed, move_share)
        else:
            _in_threads(make_client, flavors, count, ledger, threads, seed, move_share)
    finally:
        elapsed = time.perf_counter() - start
        if reporting is not None:
            reporting.stop()
    ledger.seconds += elapsed
    return elapsed
