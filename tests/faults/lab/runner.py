"""One fault under load, judged; and campaigns of them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from tests.faults.lab import checker
from tests.faults.lab.faults import Fault
from tests.faults.lab.history import Answers, Clients, make_providers
from tests.faults.lab.lab import Lab
from tests.faults.lab.net import Skipped

# Room for a few seconds of claims before providers fill up.
PROVIDERS, CAPACITY = 6, 20


@dataclass
class Result:
    fault: str
    cls: str
    backend: str
    skipped: str | None = None
    verdict: checker.Verdict | None = None
    answers: Answers | None = None
    convergence: checker.Convergence | None = None
    crashes: list[checker.Crash] = field(default_factory=list)
    heal_seconds: float = 0.0   # from healing until the database answered again
    error: str | None = None    # the lab itself failed
    # Lines of the API hosts' logs worth a look: unexpected errors, and
    # MariaDB's "Trigger ... has an error in its body" (seen once in CI).
    log_findings: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        if self.skipped:
            return []
        if self.error:
            return [f"the lab failed: {self.error}"]
        v, a, c = self.verdict, self.answers, self.convergence
        out = [f"lost by allotment: {x}" for x in v.lost_by_allotment]
        out += [f"refused write stored: {x}" for x in v.refused_stored]
        out += [f"over capacity (tables): {x}" for x in v.over_capacity]
        out += [f"over capacity (answers): {x}" for x in a.over_capacity]
        out += [f"bad answer: {x}" for x in a.bad]
        out += [f"API log: {x}" for x in self.log_findings]
        if c.seconds is None:
            out += [f"world of {w} out of step after {checker.BOUND} s: {d}"
                    for w, d in c.last.items()]
        return out

    def row(self) -> dict:
        if self.skipped or self.error:
            return {"fault": self.fault, "class": self.cls, "backend": self.backend,
                    "skipped": self.skipped, "error": self.error}
        v, a, c = self.verdict, self.answers, self.convergence
        return {
            "fault": self.fault, "class": self.cls, "backend": self.backend,
            "attempted": v.attempted, "acknowledged": v.acknowledged,
            "refused": v.refused, "unknown": v.unknown,
            "lost_by_database": len(v.lost_by_database),
            "lost_by_allotment": len(v.lost_by_allotment),
            "refused_stored": len(v.refused_stored),
            "over_capacity": len(v.over_capacity) + len(a.over_capacity),
            "feed_rows_lost": sum(max(0, x.head_before - x.head_after) for x in self.crashes),
            "workers_out_of_step": len(c.out_of_step),
            "workers_unavailable": len(c.unavailable),
            "in_step_after_s": None if c.seconds is None else round(c.seconds, 2),
            # What each worker out of step answered differently at the first
            # look, and why each unavailable one gave no answer.
            "first_look": {**c.out_of_step, **c.unavailable},
            "status_503": a.statuses.get(503, 0),
            "bad_5xx": len(a.bad), "proxy_5xx": a.proxy_errors, "no_answer": a.no_answer,
            "heal_s": round(self.heal_seconds, 1),
            "crashes": [vars(x) for x in self.crashes],
        }


def ask_all(lab: Lab):
    def ask(question):
        answers = {}
        for api in lab.apis:
            for pid, view in api.ask_each_worker(lab.client.netns, question).items():
                answers[f"{api.host.name}/{pid}"] = view
        return answers
    return ask


LOG_MARKS = ("Unexpected error handling", "has an error in its body")


def _log_offsets(lab: Lab) -> dict[str, int]:
    return {api.host.name: len(api.log()) for api in lab.apis}


def _log_findings(lab: Lab, since: dict[str, int]) -> list[str]:
    found = []
    for api in lab.apis:
        for line in api.log()[since.get(api.host.name, 0):].splitlines():
            if any(mark in line for mark in LOG_MARKS):
                found.append(f"{api.host.name}: {line[:300]}")
    return found


def run_fault(lab: Lab, fault: Fault, *, lead: float = 1.5, hold: float = 4.0,
              after: float = 2.0, clients: int = 4, seed: int = 0) -> Result:
    backend = lab.settings.backend
    result = Result(fault.name, fault.cls, backend)
    providers = make_providers(lab.client.netns, lab.api_url, PROVIDERS, CAPACITY,
                               tag=fault.name)
    load = Clients(lab.client.netns, lab.api_url, providers, CAPACITY,
                   log=lab.directory / f"history-{fault.name}.jsonl", seed=seed)
    offsets = _log_offsets(lab)
    load.start(clients)
    try:
        time.sleep(lead)
        result.crashes = fault.inject(lab, hold)
        healed = time.monotonic()
        lab.wait_database()
        lab.wait_api()
        result.heal_seconds = time.monotonic() - healed
        time.sleep(after)
    except Skipped as exc:
        result.skipped = str(exc)
        return result
    finally:
        load.stop()
    result.answers = load.answers
    engine = lab.truth()
    result.convergence = checker.converge(ask_all(lab), engine)
    truth = checker.read_truth(engine)
    result.verdict = checker.judge(load.ops, truth, result.crashes)
    result.log_findings = _log_findings(lab, offsets)
    return result


def run_all(lab: Lab, faults: list[Fault], **kw) -> list[Result]:
    results = []
    for fault in faults:
        if lab.settings.backend not in fault.backends:
            continue
        try:
            results.append(run_fault(lab, fault, **kw))
        except Exception as exc:  # the lab's own failure, reported with the others
            results.append(Result(fault.name, fault.cls, lab.settings.backend,
                                  error=f"{type(exc).__name__}: {exc}"))
        print(json.dumps(results[-1].row()), flush=True)
    return results


def save(results: list[Result], path) -> None:
    with open(path, "w") as out:
        for r in results:
            out.write(json.dumps({**r.row(), "problems": r.problems(),
                                  "lost_by_database": r.verdict.lost_by_database
                                  if r.verdict else []}, default=str) + "\n")



