"""Clients in the client host's namespace, and the history of everything
they asked and were answered, in Jepsen's manner: each operation with its
start, its end and its outcome -- ``ok`` (2xx, acknowledged), ``refused``
(4xx) or ``unknown`` (a timeout, a dropped connection, any 5xx).

Operations, through haproxy to the API hosts:

* ``claim``:   ``PUT /allocations/{new consumer}``, 1 VCPU on a provider;
* ``move``:    ``POST /allocations`` (1.28) moving one of the client's
  consumers to another provider, with the consumer's generation;
* ``delete``:  ``DELETE /allocations/{consumer}``;
* ``inventory``: ``PUT .../inventories`` with the provider's generation
  (VCPU unchanged, MEMORY_MB's reserved changed);
* ``host``:    ``POST /resource_providers`` and its VCPU inventory;
* ``read``:    ``GET /allocation_candidates`` (answers are checked, not
  recorded as writes).

A consumer whose last answer was ``unknown`` is left alone from then on:
its state in the database is then one of two, and the checker says which
are allowed (checker.py).
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests

from tests.faults.lab import net

PROJECT, USER = "lab-project", "lab-user"
TIMEOUT = 30.0
HEADERS = {"X-Auth-Token": "admin", "X-Roles": "admin,service"}


def headers(version: str = "1.36") -> dict[str, str]:
    return {**HEADERS, "OpenStack-API-Version": f"placement {version}"}


@dataclass
class Op:
    client: int
    kind: str
    subject: str            # the consumer, or the provider for inventory/host
    target: str | None      # the provider claimed on / moved to
    start: float
    end: float = 0.0
    status: int | None = None
    outcome: str = "pending"   # ok | refused | unknown
    note: str = ""


@dataclass
class Answers:
    """What came back, counted."""

    statuses: Counter = field(default_factory=Counter)
    # 5xx from allotment other than a 503 in Placement's shape with
    # Retry-After: each one a finding.
    bad: list[str] = field(default_factory=list)
    proxy_errors: int = 0     # haproxy's own 5xx pages (no API worker answered)
    no_answer: int = 0        # connection refused/reset, timeouts
    over_capacity: list[str] = field(default_factory=list)


def classify(resp: requests.Response, answers: Answers, what: str) -> str:
    """ok / refused / unknown, noting anything wrong with a 5xx."""
    status = resp.status_code
    answers.statuses[status] += 1
    if 200 <= status < 300:
        return "ok"
    if 400 <= status < 500:
        return "refused"
    if "json" not in resp.headers.get("content-type", ""):
        answers.proxy_errors += 1  # haproxy's page: the request never got an answer
        return "unknown"
    problem = ""
    try:
        error = resp.json()["errors"][0]
    except (ValueError, KeyError, IndexError):
        problem = "not in Placement's error shape"
    else:
        if status != 503:
            problem = f"a {status}"
        elif not resp.headers.get("Retry-After"):
            problem = "a 503 without Retry-After"
        elif error.get("status") != 503 or "Traceback" in resp.text:
            problem = "a 503 not in Placement's shape"
    if problem:
        answers.bad.append(f"{what}: {problem}: {resp.text[:300]}")
    return "unknown"


class Clients:
    """``count`` client threads in ``netns`` against ``url`` until :meth:`stop`."""

    WEIGHTS = {"claim": 5, "move": 2, "delete": 3, "inventory": 1, "host": 1, "read": 2}

    def __init__(self, netns: str, url: str, providers: list[str], capacity: int, *,
                 log: Path, seed: int = 0) -> None:
        self.netns = netns
        self.url = url
        self.providers = list(providers)
        self.capacity = capacity
        self.ops: list[Op] = []
        self.answers = Answers()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.last = threading.local()  # each client's last outcome
        self.seed = seed
        self.log = log.open("a")

    # -- running -----------------------------------------------------------------

    def start(self, count: int) -> None:
        for i in range(count):
            thread = threading.Thread(target=self._client, args=(i,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(TIMEOUT * 3)
            if thread.is_alive():
                self.answers.bad.append("a client hung past its timeouts")
        self.threads.clear()
        self.log.close()

    def _client(self, number: int) -> None:
        net.enter(self.netns)
        rnd = random.Random(self.seed * 1000 + number)
        session = requests.Session()
        mine: list[str] = []
        kinds = [k for k, w in self.WEIGHTS.items() for _ in range(w)]
        while not self.stopping.is_set():
            kind = rnd.choice(kinds)
            try:
                getattr(self, f"_{kind}")(session, number, rnd, mine)
            except Exception as exc:  # the client's own failure is a finding
                with self.lock:
                    self.answers.bad.append(f"client {number}: {kind}: {exc!r}")
                return
            if getattr(self.last, "unknown", False):
                # As a client told to retry would: not at once, in a loop.
                time.sleep(0.05)

    def _send(self, session: requests.Session, op: Op | None, method: str, path: str,
              version: str = "1.36", **kw) -> tuple[str, requests.Response | None]:
        try:
            resp = session.request(method, self.url + path, headers=headers(version),
                                   timeout=TIMEOUT, **kw)
        except requests.RequestException as exc:
            with self.lock:
                self.answers.no_answer += 1
                if isinstance(exc, requests.Timeout):
                    self.answers.bad.append(f"{method} {path}: no answer in {TIMEOUT} s")
            outcome, resp = "unknown", None
        else:
            with self.lock:
                outcome = classify(resp, self.answers, f"{method} {path}")
        self.last.unknown = outcome == "unknown"
        if op is not None:
            op.end = time.time()
            op.status = None if resp is None else resp.status_code
            op.outcome = outcome
            if resp is not None and outcome != "ok":
                op.note = resp.text[:200]
            with self.lock:
                self.ops.append(op)
                self.log.write(json.dumps(asdict(op)) + "\n")
        return outcome, resp

    # -- operations ----------------------------------------------------------------

    def _claim(self, session, number, rnd, mine) -> None:
        consumer, provider = str(uuid.uuid4()), rnd.choice(self.providers)
        op = Op(number, "claim", consumer, provider, time.time())
        outcome, _ = self._send(session, op, "PUT", f"/allocations/{consumer}", json={
            "allocations": {provider: {"resources": {"VCPU": 1}}},
            "project_id": PROJECT, "user_id": USER, "consumer_generation": None})
        if outcome == "ok":
            mine.append(consumer)

    def _move(self, session, number, rnd, mine) -> None:
        if not mine:
            return
        consumer = rnd.choice(mine)
        outcome, resp = self._send(session, None, "GET", f"/allocations/{consumer}",
                                   version="1.28")
        if outcome != "ok":
            return
        body = resp.json()
        if not body.get("allocations"):
            # Acknowledged before, gone now: the checker will say whose loss.
            mine.remove(consumer)
            return
        target = rnd.choice(self.providers)
        op = Op(number, "move", consumer, target, time.time())
        outcome, _ = self._send(session, op, "POST", "/allocations", version="1.28", json={
            consumer: {"allocations": {target: {"resources": {"VCPU": 1}}},
                       "project_id": PROJECT, "user_id": USER,
                       "consumer_generation": body["consumer_generation"]}})
        if outcome == "unknown":
            mine.remove(consumer)

    def _delete(self, session, number, rnd, mine) -> None:
        if not mine:
            return
        consumer = mine.pop(rnd.randrange(len(mine)))
        op = Op(number, "delete", consumer, None, time.time())
        self._send(session, op, "DELETE", f"/allocations/{consumer}")

    def _inventory(self, session, number, rnd, mine) -> None:
        provider = rnd.choice(self.providers)
        outcome, resp = self._send(session, None, "GET", f"/resource_providers/{provider}")
        if outcome != "ok":
            return
        op = Op(number, "inventory", provider, None, time.time())
        self._send(session, op, "PUT", f"/resource_providers/{provider}/inventories", json={
            "resource_provider_generation": resp.json()["generation"],
            "inventories": {"VCPU": {"total": self.capacity},
                            "MEMORY_MB": {"total": 4096, "reserved": rnd.randrange(64)}}})

    def _host(self, session, number, rnd, mine) -> None:
        if rnd.random() > 0.3:
            return
        provider = str(uuid.uuid4())
        op = Op(number, "host", provider, None, time.time())
        outcome, _ = self._send(session, op, "POST", "/resource_providers",
                                json={"name": f"lab-host-{provider}", "uuid": provider})
        if outcome != "ok":
            return
        outcome, _ = self._send(session, None, "PUT", f"/resource_providers/{provider}/inventories",
                                json={"resource_provider_generation": 0,
                                      "inventories": {"VCPU": {"total": self.capacity}}})

    def _read(self, session, number, rnd, mine) -> None:
        outcome, resp = self._send(session, None, "GET",
                                   "/allocation_candidates?resources=VCPU:1&limit=1000")
        if outcome != "ok":
            return
        for provider, summary in resp.json()["provider_summaries"].items():
            vcpu = summary["resources"].get("VCPU")
            if vcpu and vcpu["used"] > vcpu["capacity"]:
                with self.lock:
                    self.answers.over_capacity.append(
                        f"candidates showed {provider} at {vcpu['used']}/{vcpu['capacity']}")


def make_providers(netns: str, url: str, count: int, capacity: int, tag: str) -> list[str]:
    """``count`` compute hosts with ``capacity`` VCPU, through ``url``."""
    def create() -> list[str]:
        made = []
        with requests.Session() as s:
            for i in range(count):
                rp = str(uuid.uuid4())
                for method, path, body in (
                        ("POST", "/resource_providers", {"name": f"{tag}-{i}-{rp[:8]}",
                                                         "uuid": rp}),
                        ("PUT", f"/resource_providers/{rp}/inventories",
                         {"resource_provider_generation": 0, "inventories": {
                             "VCPU": {"total": capacity}, "MEMORY_MB": {"total": 4096}}})):
                    resp = s.request(method, url + path, json=body, headers=headers(),
                                     timeout=TIMEOUT)
                    if resp.status_code >= 300:
                        raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text}")
                made.append(rp)
        return made
    return net.call_in(netns, create)
