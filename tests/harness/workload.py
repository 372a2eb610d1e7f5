"""Mixed Placement traffic whose every answer is recorded, and the audit of
what the database holds afterwards.

Clients claim (``POST /allocations`` for two consumers at once, ``PUT
/allocations/{c}``), delete, replace inventories, set traits, reshape and
ask for candidates, against a small set of providers so that claims race
for the last units.  Each consumer is claimed once, so what the database
must hold for it follows from the answers alone:

* a 2xx claim and no 2xx delete since: present, with exactly what was asked;
* a refused claim (4xx) or a 2xx delete: absent;
* an answer the client could not interpret as done or not done (a 503, a
  dropped connection): present exactly or absent -- and for a two-consumer
  ``POST /allocations``, both or neither.

:func:`audit` checks that, that no provider is over capacity, that every
reshape moved inventory and allocation together, and that the service's
in-memory view (candidates) agrees with the tables.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import requests
import sqlalchemy as sa

from allotment.storage import db as db_mod
from allotment.storage import tables

PROJECT, USER = "load-project", "load-user"
VERSION = "1.36"  # consumer types (1.38) would only add bookkeeping here
# A client that waits longer than this for an answer counts as a hang.
REQUEST_TIMEOUT = 30.0
RESHAPE_VCPU = 4


def _headers(version: str = VERSION) -> dict[str, str]:
    # Under the new policy defaults only the service role may reshape.
    return {"X-Auth-Token": "admin", "X-Roles": "admin,service",
            "OpenStack-API-Version": f"placement {version}"}


@dataclass
class Outcome:
    """Answers for one consumer: what it asked, and how the claim/delete went."""

    provider: str
    amount: int
    partner: str | None = None
    claim: str = "pending"    # ok | refused | unknown
    delete: str | None = None  # ok | refused | unknown


@dataclass
class Record:
    statuses: Counter = field(default_factory=Counter)
    # (the URL of the service that answered, status): who answered what.
    by_service: Counter = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)  # 5xx other than 503, bad bodies
    # Each 503: the request and the detail it gave (what the database did).
    unavailable: list[str] = field(default_factory=list)
    consumers: dict[str, Outcome] = field(default_factory=dict)
    claims_ok: int = 0
    claims: int = 0
    # Providers created and deleted again: uuid -> (created, deleted) verdicts
    churn: dict[str, list[str | None]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Workload:
    """Traffic against one or more API URLs sharing one database."""

    # How often each operation is picked, relative to the others.
    WEIGHTS = {"claim_pair": 4, "claim_one": 3, "delete": 3, "candidates": 3,
               "inventory": 1, "traits": 1, "reshape": 1, "provider_churn": 1}

    def __init__(self, urls: list[str], *, providers: int = 4, vcpus: int = 12,
                 reshape_pairs: int = 2, seed: int = 0,
                 weights: dict[str, int] | None = None) -> None:
        self.urls = urls
        self.weights = {**self.WEIGHTS, **(weights or {})}
        self.vcpus = vcpus
        self.rnd = random.Random(seed)
        self.record = Record()
        self.providers: list[str] = []
        # (root, child, consumer holding 2 VCPU on whichever has the inventory)
        self.reshape: list[tuple[str, str, str]] = []
        self.reshape_locks: list[threading.Lock] = []
        s = requests.Session()
        url = urls[0]
        for i in range(providers):
            rp = str(uuid.uuid4())
            self._ok(s.post(f"{url}/resource_providers", headers=_headers(),
                            json={"name": f"load-{i}-{rp[:8]}", "uuid": rp}))
            self._ok(s.put(f"{url}/resource_providers/{rp}/inventories", headers=_headers(),
                           json={"resource_provider_generation": 0, "inventories": {
                               "VCPU": {"total": vcpus}, "MEMORY_MB": {"total": 4096}}}))
            self.providers.append(rp)
        for i in range(reshape_pairs):
            root, child, consumer = (str(uuid.uuid4()) for _ in range(3))
            self._ok(s.post(f"{url}/resource_providers", headers=_headers(),
                            json={"name": f"reshape-{i}-{root[:8]}", "uuid": root}))
            self._ok(s.post(f"{url}/resource_providers", headers=_headers(),
                            json={"name": f"reshape-{i}-child-{child[:8]}", "uuid": child,
                                  "parent_provider_uuid": root}))
            self._ok(s.put(f"{url}/resource_providers/{root}/inventories", headers=_headers(),
                           json={"resource_provider_generation": 0, "inventories": {
                               "PCPU": {"total": RESHAPE_VCPU}}}))
            self._ok(s.put(f"{url}/allocations/{consumer}", headers=_headers(), json={
                "allocations": {root: {"resources": {"PCPU": 2}}},
                "project_id": PROJECT, "user_id": USER, "consumer_generation": None}))
            self.reshape.append((root, child, consumer))
            self.reshape_locks.append(threading.Lock())

    @staticmethod
    def _ok(resp: requests.Response) -> None:
        assert resp.status_code in (200, 201, 204), resp.text

    # -- one client ----------------------------------------------------------

    def run_client(self, until: float, seed: int, *, pause: float = 0.0) -> None:
        """Send random operations until ``time.monotonic()`` passes ``until``."""
        rnd = random.Random(seed)
        session = requests.Session()
        mine: list[str] = []  # consumers this client claimed successfully
        ops = [getattr(self, f"_{name}") for name, weight in self.weights.items()
               for _ in range(weight)]
        while time.monotonic() < until:
            op = rnd.choice(ops)
            url = rnd.choice(self.urls)
            try:
                op(session, url, rnd, mine)
            except Exception as exc:  # a client that dies is a finding, not noise
                with self.record.lock:
                    self.record.bad.append(f"client {seed}: {op.__name__}: {exc!r}")
                return
            if pause:
                time.sleep(pause)

    def _send(self, session, method: str, url: str, **kw) -> int | None:
        """The status, or None when no answer came (connection refused/reset)."""
        try:
            resp = session.request(method, url, headers=_headers(kw.pop("version", VERSION)),
                                   timeout=REQUEST_TIMEOUT, **kw)
        except requests.Timeout:
            with self.record.lock:
                self.record.bad.append(f"{method} {url}: no answer in {REQUEST_TIMEOUT} s")
            return None
        except requests.ConnectionError:
            with self.record.lock:
                self.record.statuses["no answer"] += 1
            return None
        with self.record.lock:
            self.record.statuses[resp.status_code] += 1
            self.record.by_service[next((u for u in self.urls if url.startswith(u)), url),
                                   resp.status_code] += 1
            if resp.status_code >= 500:
                self._check_503(method, url, resp)
        return resp.status_code

    def _check_503(self, method: str, url: str, resp: requests.Response) -> None:
        if resp.status_code != 503:
            self.record.bad.append(f"{method} {url}: {resp.status_code} {resp.text[:300]}")
            return
        try:
            error = resp.json()["errors"][0]
            assert error["status"] == 503 and error["title"] and error["detail"]
            assert "Traceback" not in resp.text
            self.record.unavailable.append(f"{method} {url}: {error['detail']}")
        except Exception:  # any shape problem is the finding
            self.record.bad.append(f"{method} {url}: 503 not in Placement's shape: "
                                   f"{resp.text[:300]}")

    @staticmethod
    def _verdict(status: int | None) -> str:
        if status is not None and 200 <= status < 300:
            return "ok"
        if status is not None and 400 <= status < 500:
            return "refused"
        return "unknown"

    def _claim_pair(self, session, url, rnd, mine) -> None:
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        pa, pb = rnd.choice(self.providers), rnd.choice(self.providers)
        body = {c: {"allocations": {p: {"resources": {"VCPU": 1}}}, "project_id": PROJECT,
                    "user_id": USER, "consumer_generation": None}
                for c, p in ((a, pa), (b, pb))}
        with self.record.lock:
            self.record.consumers[a] = Outcome(pa, 1, partner=b)
            self.record.consumers[b] = Outcome(pb, 1, partner=a)
        verdict = self._verdict(self._send(session, "POST", f"{url}/allocations", json=body))
        with self.record.lock:
            self.record.consumers[a].claim = self.record.consumers[b].claim = verdict
            self.record.claims += 2
            if verdict == "ok":
                self.record.claims_ok += 2
        if verdict == "ok":
            mine.extend((a, b))

    def _claim_one(self, session, url, rnd, mine) -> None:
        c, p = str(uuid.uuid4()), rnd.choice(self.providers)
        amount = rnd.choice((1, 2))
        with self.record.lock:
            self.record.consumers[c] = Outcome(p, amount)
        verdict = self._verdict(self._send(
            session, "PUT", f"{url}/allocations/{c}",
            json={"allocations": {p: {"resources": {"VCPU": amount}}}, "project_id": PROJECT,
                  "user_id": USER, "consumer_generation": None}))
        with self.record.lock:
            self.record.consumers[c].claim = verdict
            self.record.claims += 1
            if verdict == "ok":
                self.record.claims_ok += 1
        if verdict == "ok":
            mine.append(c)

    def _delete(self, session, url, rnd, mine) -> None:
        if not mine:
            return
        c = mine.pop(rnd.randrange(len(mine)))
        status = self._send(session, "DELETE", f"{url}/allocations/{c}")
        with self.record.lock:
            self.record.consumers[c].delete = self._verdict(status)

    def _candidates(self, session, url, rnd, mine) -> None:
        self._send(session, "GET", f"{url}/allocation_candidates?resources=VCPU:1&limit=5")

    @staticmethod
    def _generation(session, url, p) -> int | None:
        """The provider's generation now, or None if it could not be read."""
        try:
            return session.get(f"{url}/resource_providers/{p}", headers=_headers(),
                               timeout=REQUEST_TIMEOUT).json()["generation"]
        except (requests.RequestException, ValueError, KeyError):
            return None

    def _inventory(self, session, url, rnd, mine) -> None:
        p = rnd.choice(self.providers)
        gen = self._generation(session, url, p)
        if gen is None:
            return
        # Capacity stays as it was; the write still replaces every row.
        self._send(session, "PUT", f"{url}/resource_providers/{p}/inventories", json={
            "resource_provider_generation": gen, "inventories": {
                "VCPU": {"total": self.vcpus},
                "MEMORY_MB": {"total": 4096, "reserved": rnd.randrange(0, 64)}}})

    def _traits(self, session, url, rnd, mine) -> None:
        p = rnd.choice(self.providers)
        gen = self._generation(session, url, p)
        if gen is None:
            return
        traits = rnd.sample(["HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "STORAGE_DISK_SSD"],
                            rnd.randrange(0, 3))
        self._send(session, "PUT", f"{url}/resource_providers/{p}/traits",
                   json={"resource_provider_generation": gen, "traits": traits})

    def _reshape(self, session, url, rnd, mine) -> None:
        if not self.reshape:
            return
        i = rnd.randrange(len(self.reshape))
        if not self.reshape_locks[i].acquire(blocking=False):
            return
        try:
            root, child, consumer = self.reshape[i]
            try:
                view = {p: session.get(f"{url}/resource_providers/{p}/inventories",
                                       headers=_headers(), timeout=REQUEST_TIMEOUT).json()
                        for p in (root, child)}
                alloc = session.get(f"{url}/allocations/{consumer}", headers=_headers(),
                                    timeout=REQUEST_TIMEOUT).json()
            except (requests.RequestException, ValueError):
                return
            if not all("resource_provider_generation" in v for v in view.values()) \
                    or "consumer_generation" not in alloc:
                return  # the reads were refused (the database is away)
            src, dst = (root, child) if view[root]["inventories"] else (child, root)
            body = {
                "inventories": {
                    src: {"resource_provider_generation":
                          view[src]["resource_provider_generation"], "inventories": {}},
                    dst: {"resource_provider_generation":
                          view[dst]["resource_provider_generation"],
                          "inventories": {"PCPU": {"total": RESHAPE_VCPU}}}},
                "allocations": {consumer: {
                    "allocations": {dst: {"resources": {"PCPU": 2}}},
                    "project_id": PROJECT, "user_id": USER,
                    "consumer_generation": alloc["consumer_generation"]}}}
            self._send(session, "POST", f"{url}/reshaper", json=body, version="1.30")
        finally:
            self.reshape_locks[i].release()

    def _provider_churn(self, session, url, rnd, mine) -> None:
        """A provider with inventory and traits is created and deleted again."""
        rp = str(uuid.uuid4())
        with self.record.lock:
            self.record.churn[rp] = [None, None]
        created = self._verdict(self._send(session, "POST", f"{url}/resource_providers",
                                           json={"name": f"churn-{rp}", "uuid": rp}))
        with self.record.lock:
            self.record.churn[rp][0] = created
        if created != "ok":
            return
        self._send(session, "PUT", f"{url}/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"DISK_GB": {"total": 100}, "VCPU": {"total": 2}}})
        deleted = self._verdict(self._send(session, "DELETE",
                                           f"{url}/resource_providers/{rp}"))
        with self.record.lock:
            self.record.churn[rp][1] = deleted

    # -- running ---------------------------------------------------------------

    def run(self, clients: int, seconds: float, *, during=None, pause: float = 0.0) -> None:
        """``clients`` threads for ``seconds``; ``during()`` runs meanwhile in
        this thread (e.g. to kill the database)."""
        until = time.monotonic() + seconds
        threads = [threading.Thread(target=self.run_client, args=(until, 1000 + i),
                                    kwargs={"pause": pause}, daemon=True)
                   for i in range(clients)]
        for t in threads:
            t.start()
        if during is not None:
            during()
        for t in threads:
            t.join(timeout=seconds + REQUEST_TIMEOUT * 3)
            assert not t.is_alive(), "a client hung"


# -- audit ---------------------------------------------------------------------

def audit(workload: Workload, database_url: str) -> dict:
    """Compare the database with the answers; returns counts for reports.

    Raises AssertionError naming the first few discrepancies.
    """
    rec = workload.record
    problems: list[str] = list(rec.bad)
    engine = sa.create_engine(db_mod.normalise_url(database_url))
    a, c, rp, rc, inv = (tables.allocations, tables.consumers, tables.resource_providers,
                         tables.resource_classes, tables.inventories)
    try:
        with engine.connect() as conn:
            held: dict[str, dict[str, int]] = {}
            rows = conn.execute(
                sa.select(c.c.uuid, rp.c.uuid, rc.c.name, a.c.used)
                .select_from(a.join(c, c.c.uuid == a.c.consumer_id)
                             .join(rp, rp.c.id == a.c.resource_provider_id)
                             .join(rc, rc.c.id == a.c.resource_class_id)))
            for consumer, provider, cls, used in rows:
                held.setdefault(consumer, {})[f"{provider}/{cls}"] = used
            usage = dict(conn.execute(
                sa.select(rp.c.uuid, sa.func.sum(a.c.used))
                .select_from(a.join(rp, rp.c.id == a.c.resource_provider_id)
                             .join(rc, rc.c.id == a.c.resource_class_id))
                .where(rc.c.name == "VCPU").group_by(rp.c.uuid)).all())
            capacity = dict(conn.execute(
                sa.select(rp.c.uuid, inv.c.total - inv.c.reserved)
                .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id)
                             .join(rc, rc.c.id == inv.c.resource_class_id))
                .where(rc.c.name == "VCPU")).all())
            churned = sorted(rec.churn)
            existing = set(conn.execute(sa.select(rp.c.uuid).where(
                rp.c.uuid.in_(churned))).scalars()) if churned else set()
            reshape_state = {}
            for root, child, consumer in workload.reshape:
                has = {p: bool(conn.execute(
                    sa.select(sa.func.count()).select_from(inv.join(
                        rp, rp.c.id == inv.c.resource_provider_id))
                    .where(rp.c.uuid == p)).scalar()) for p in (root, child)}
                reshape_state[consumer] = (has, held.get(consumer, {}))
    finally:
        engine.dispose()

    def present_exactly(consumer: str, o: Outcome) -> bool | None:
        got = held.get(consumer)
        if got is None:
            return False
        return True if got == {f"{o.provider}/VCPU": o.amount} else None

    unknown = 0
    for consumer, o in rec.consumers.items():
        state = present_exactly(consumer, o)
        if state is None:
            problems.append(f"{consumer}: holds {held[consumer]}, asked {o}")
            continue
        if o.claim == "pending":
            continue  # the client was stopped before it sent it
        if o.claim == "refused" and state:
            problems.append(f"{consumer}: claim refused but allocation present")
        elif o.claim == "ok" and o.delete in (None, "refused") and not state:
            problems.append(f"{consumer}: claim succeeded but allocation missing")
        elif o.delete == "ok" and state:
            problems.append(f"{consumer}: deleted but allocation still present")
        if "unknown" in (o.claim, o.delete):
            unknown += 1
        if o.partner is not None and o.delete is None:
            partner = rec.consumers[o.partner]
            if partner.delete is None and bool(present_exactly(o.partner, partner)) != state:
                problems.append(f"{consumer} and {o.partner}: one claim of a pair written")
    for provider, (created, deleted) in rec.churn.items():
        there = provider in existing
        if created == "refused" and there:
            problems.append(f"provider {provider}: create refused but present")
        if created == "ok" and deleted in (None, "refused") and not there:
            problems.append(f"provider {provider}: created, not deleted, yet missing")
        if deleted == "ok" and there:
            problems.append(f"provider {provider}: deleted but still present")
    for provider, used in usage.items():
        if provider in capacity and used > capacity[provider]:
            problems.append(f"{provider}: {used} VCPU used of {capacity[provider]}")
    for has, got in reshape_state.values():
        with_inventory = [p for p, yes in has.items() if yes]
        if len(with_inventory) != 1 or got != {f"{with_inventory[0]}/PCPU": 2}:
            problems.append(f"reshape half done: inventory on {with_inventory}, "
                            f"allocation {got}")
    assert not problems, "\n".join(problems[:20])
    return {"claims": rec.claims, "claims_ok": rec.claims_ok, "unknown": unknown,
            "statuses": dict(rec.statuses), "usage": usage}


def candidates_agree(url: str, workload: Workload, usage: dict[str, int],
                     tries: int = 4) -> None:
    """The service's in-memory world (what candidates are built from) shows
    the usage the tables hold, on each of ``tries`` requests (spread over the
    workers behind ``url``)."""
    for _ in range(tries):
        resp = requests.get(f"{url}/allocation_candidates?resources=VCPU:1&limit=1000",
                            headers=_headers(), timeout=REQUEST_TIMEOUT)
        assert resp.status_code == 200, resp.text
        summaries = resp.json()["provider_summaries"]
        for provider in workload.providers:
            used = usage.get(provider, 0)
            if used >= workload.vcpus:
                assert provider not in summaries
                continue
            seen = summaries[provider]["resources"]["VCPU"]["used"]
            assert seen == used, (provider, seen, used)
