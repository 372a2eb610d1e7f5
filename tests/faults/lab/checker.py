"""After the faults are healed, decide from the history and the database
whether allotment kept its word (docs/reliability.md):

* no provider over capacity, in the tables or in any worker's answers;
* every acknowledged write present -- unless the database itself lost
  that commit, counted apart: a write is the database's loss only when
  every row it wrote is gone (the consumer is back in an earlier
  acknowledged state, or a created provider is absent), it was
  acknowledged before the database crashed, and nothing written after
  it survived that crash (a lost tail; a hole before a surviving later
  commit is allotment's);
* no refused write stored (the consumer is in a state no acknowledged or
  unknown write could have left);
* every API worker's world equal to the database (usages, generations,
  the provider tree, candidates for one fixed request) within
  ``BOUND`` seconds after the clients stopped;
* never a 5xx from allotment but a 503 with Retry-After in Placement's shape.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests
import sqlalchemy as sa

from tests.faults.lab.history import TIMEOUT, Op, headers

BOUND = 5.0


# -- the database's truth -------------------------------------------------------

@dataclass
class Truth:
    holdings: dict[str, str]                      # consumer -> provider (VCPU)
    providers: dict[str, tuple[int, str | None, str]]  # uuid -> (generation, parent, root)
    usage: dict[str, int]                          # uuid -> VCPU used
    capacity: dict[str, int]                       # uuid -> VCPU capacity
    candidates: set[str]                           # providers VCPU:1 fits on
    feed_head: int


def read_truth(engine: sa.Engine) -> Truth:
    with engine.connect() as conn:
        q = conn.execute
        holdings = dict(q(sa.text(
            "SELECT c.uuid, rp.uuid FROM allocations a JOIN consumers c ON c.uuid = a.consumer_id"
            " JOIN resource_providers rp ON rp.id = a.resource_provider_id"
            " JOIN resource_classes rc ON rc.id = a.resource_class_id"
            " WHERE rc.name = 'VCPU'")).all())
        providers = {u: (g, p, r) for u, g, p, r in q(sa.text(
            "SELECT rp.uuid, rp.generation, parent.uuid, root.uuid FROM resource_providers rp"
            " LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id"
            " JOIN resource_providers root ON root.id = rp.root_provider_id")).all()}
        usage = {u: int(n) for u, n in q(sa.text(
            "SELECT rp.uuid, SUM(a.used) FROM allocations a"
            " JOIN resource_providers rp ON rp.id = a.resource_provider_id"
            " JOIN resource_classes rc ON rc.id = a.resource_class_id"
            " WHERE rc.name = 'VCPU' GROUP BY rp.uuid")).all()}
        inventory = q(sa.text(
            "SELECT rp.uuid, i.total, i.reserved, i.allocation_ratio, i.min_unit, i.max_unit"
            " FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id"
            " JOIN resource_classes rc ON rc.id = i.resource_class_id"
            " WHERE rc.name = 'VCPU'")).all()
        head = q(sa.text("SELECT MAX(id) FROM placement_changes")).scalar() or 0
    capacity, candidates = {}, set()
    for u, total, reserved, ratio, min_unit, max_unit in inventory:
        capacity[u] = int((total - reserved) * ratio)
        if min_unit <= 1 <= max_unit and capacity[u] - usage.get(u, 0) >= 1:
            candidates.add(u)
    return Truth(holdings, providers, {u: usage.get(u, 0) for u in providers}, capacity,
                 candidates, head)


def feed_head(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT MAX(id) FROM placement_changes")).scalar() or 0


# -- what one worker answers -------------------------------------------------------

@dataclass
class View:
    providers: dict[str, tuple[int, str | None, str]]
    usage: dict[str, int]
    capacity: dict[str, int]
    candidates: set[str]


def worker_view(url: str, session: requests.Session | None = None) -> View:
    s = session or requests.Session()

    def get(path: str) -> dict:
        resp = s.get(url + path, headers=headers("1.36"), timeout=TIMEOUT)
        resp.raise_for_status()
        return resp.json()

    providers = {p["uuid"]: (p["generation"], p["parent_provider_uuid"],
                             p["root_provider_uuid"])
                 for p in get("/resource_providers")["resource_providers"]}
    usage = {u: get(f"/resource_providers/{u}/usages")["usages"].get("VCPU", 0)
             for u in providers}
    found = get("/allocation_candidates?resources=VCPU:1&limit=10000")
    candidates = {next(iter(r["allocations"])) for r in found["allocation_requests"]}
    capacity = {u: s["resources"]["VCPU"]["capacity"]
                for u, s in found["provider_summaries"].items() if "VCPU" in s["resources"]}
    return View(providers, usage, capacity, candidates)


def _view_or_error(url: str) -> View | str:
    try:
        return worker_view(url)
    except (requests.RequestException, ValueError) as exc:
        return f"no view: {exc}"


def differences(view: View, truth: Truth) -> list[str]:
    out = []
    if view.providers != truth.providers:
        extra = set(view.providers) - set(truth.providers)
        missing = set(truth.providers) - set(view.providers)
        changed = [u for u in set(view.providers) & set(truth.providers)
                   if view.providers[u] != truth.providers[u]]
        out.append(f"providers: {len(extra)} not in the database, {len(missing)} missing, "
                   f"{len(changed)} differ (generation/tree)")
    usage = {u: n for u, n in view.usage.items() if truth.usage.get(u, 0) != n}
    if usage:
        out.append(f"usage differs on {len(usage)} providers")
    if view.candidates != truth.candidates:
        out.append(f"candidates: {len(view.candidates - truth.candidates)} extra, "
                   f"{len(truth.candidates - view.candidates)} missing")
    for u, used in view.usage.items():
        cap = truth.capacity.get(u)
        if cap is not None and used > cap:
            out.append(f"answers {u} at {used} VCPU of {cap}")
    return out


@dataclass
class Convergence:
    seconds: float | None           # None: not within the bound
    # worker -> differences at the first look: answers other than the
    # database's (a world behind or ahead of it)
    out_of_step: dict[str, list[str]]
    last: dict[str, list[str]]        # worker -> differences at the end (empty if equal)
    # worker -> why it gave no view at the first look (a 503 while the
    # database was not yet back, or no answer: unavailable, not out of step)
    unavailable: dict[str, list[str]] = field(default_factory=dict)


def converge(ask_all: Callable[[Callable[[str], View]], dict[str, View]],
             engine: sa.Engine, bound: float = BOUND) -> Convergence:
    """Ask every worker until each answers what the database holds, or
    ``bound`` seconds have passed."""
    truth = read_truth(engine)
    started = time.monotonic()
    first: dict[str, list[str]] | None = None
    unavailable: dict[str, list[str]] = {}
    while True:
        views = ask_all(_view_or_error)
        diffs = {w: [v] if isinstance(v, str) else differences(v, truth)
                 for w, v in views.items()}
        if first is None:
            first = {w: d for w, d in diffs.items() if d and not isinstance(views[w], str)}
            unavailable = {w: d for w, d in diffs.items() if isinstance(views[w], str)}
        if not any(diffs.values()):
            # In step at the first look: no time was needed.
            waited = time.monotonic() - started if first or unavailable else 0.0
            return Convergence(waited, first, {}, unavailable)
        if time.monotonic() - started > bound:
            return Convergence(None, first, {w: d for w, d in diffs.items() if d}, unavailable)
        time.sleep(0.2)


# -- the history against the truth --------------------------------------------------

@dataclass
class Crash:
    """A crash of the database: when, and the feed's last id before and after."""
    at: float
    head_before: int
    head_after: int
    sampled_at: float = 0.0   # when head_before was read
    # When the database could take a write again at the earliest (its
    # recovery begun); None: unknown.  A write acknowledged between ``at``
    # and then was committed before the crash, its answer still on its way.
    back_at: float | None = None

    @property
    def lost_tail(self) -> bool:
        return self.head_after < self.head_before


@dataclass
class Verdict:
    attempted: int = 0
    acknowledged: int = 0
    refused: int = 0
    unknown: int = 0
    lost_by_database: list[str] = field(default_factory=list)
    lost_by_allotment: list[str] = field(default_factory=list)
    refused_stored: list[str] = field(default_factory=list)
    over_capacity: list[str] = field(default_factory=list)


def _apply(state: str | None, op: Op) -> str | None:
    if op.kind in ("claim", "move"):
        return op.target
    if op.kind == "delete":
        return None
    if op.kind == "host":
        return "present"
    return state


def judge(ops: list[Op], truth: Truth, crashes: list[Crash]) -> Verdict:
    verdict = Verdict()
    by_subject: dict[str, list[Op]] = {}
    for op in sorted(ops, key=lambda o: o.start):
        verdict.attempted += 1
        verdict.acknowledged += op.outcome == "ok"
        verdict.refused += op.outcome == "refused"
        verdict.unknown += op.outcome == "unknown"
        if op.kind != "inventory":
            by_subject.setdefault(op.subject, []).append(op)
    # Acknowledged writes whose own effect the database shows: the one write
    # of a subject that left the state it holds, where no other write of it
    # left that state (a move that a later move overwrote, or one to where
    # the consumer already was, shows nothing of its own).
    observed: list[Op] = []
    missing: list[Op] = []     # acknowledged writes it does not show
    for subject, seq in by_subject.items():
        if seq[0].kind == "host":
            actual = "present" if subject in truth.providers else None
        else:
            actual = truth.holdings.get(subject)
        # states[i]: the state once the first i acknowledged writes applied.
        states: list[tuple[str | None, Op | None]] = [(None, None)]
        allowed = {None}
        for op in seq:
            current = states[-1][0]
            if op.outcome == "ok":
                states.append((_apply(current, op), op))
                allowed = {states[-1][0]}
            elif op.outcome == "unknown":
                allowed = allowed | {_apply(s, op) for s in allowed}
        # Writes missing: those after the last state that is the
        # database's (a claim and its delete both lost leave the state
        # they would leave applied).
        matches = [i for i, (s, _) in enumerate(states) if s == actual]
        if len(matches) == 1 and matches[0] >= 1:
            observed.append(states[matches[0]][1])
        if actual in allowed:
            continue
        if not matches:
            verdict.refused_stored.append(f"{subject}: holds {actual!r}, which no "
                                          f"acknowledged or unknown write left: {seq}")
            continue
        missing.extend(o for _, o in states[matches[-1] + 1:])
    for o in missing:
        text = f"{o.kind} {o.subject} -> {o.target} acknowledged at {o.end:.3f}"
        (verdict.lost_by_database if _lost_tail(o, observed, crashes)
         else verdict.lost_by_allotment).append(text)
    for u, used in truth.usage.items():
        if u in truth.capacity and used > truth.capacity[u]:
            verdict.over_capacity.append(f"{u}: {used} VCPU of {truth.capacity[u]}")
    return verdict


def _lost_tail(write: Op, observed: list[Op], crashes: list[Crash]) -> bool:
    """Whether ``write`` went with a tail the database lost in a crash: it
    was committed before the crash (acknowledged before it, or begun before
    it and acknowledged before the database could take writes again: the
    answer of a commit made just before the kill reaches the client just
    after), and no write begun after that acknowledgement and committed
    before the crash survived.  A database that loses commits loses its
    last ones; a hole before a surviving later commit is not the
    database's doing.  A later write committed before the crash is one
    begun before it and acknowledged before the database could take writes
    again: one acknowledged after may have been committed after the
    recovery (its request waited, or was tried again), and proves no hole."""
    for crash in crashes:
        back = crash.back_at if crash.back_at is not None else float("inf")
        answered_late = crash.back_at is not None and write.start < crash.at and write.end < back
        if write.end > crash.at and not answered_late:
            continue
        if not any(write.end < o.start < crash.at and o.end < back for o in observed):
            return True
    return False
