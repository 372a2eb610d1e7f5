"""Run one scenario on upstream Placement and on allotment side by side.

:func:`run_scenario` replays the same operations on both services and
returns the first difference that is not a known upstream defect, with a
reproduction: the scenario's requests as a shell script of ``curl`` lines,
like the ones in the issue tracker.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tests.differential import ops as O
from tests.differential.compare import compare
from tests.differential.replay import Exchange, Replay

_runs = itertools.count()
# What the lane has compared so far in this process.
COUNTS = {"requests": 0, "scenarios": 0}


@dataclass
class Difference:
    problem: str
    script: str
    upstream: object
    allotment: object

    def __str__(self) -> str:
        return (f"{self.problem}\n--- reproduction (a fresh database, $URL) ---\n"
                f"{self.script}\n--- upstream ---\n{self.upstream}\n"
                f"--- allotment ---\n{self.allotment}")


def _unsuffixed(params) -> dict[str, int]:
    for key, value in params:
        if key == "resources":
            try:
                return {rc: int(n) for rc, n in (p.split(":") for p in value.split(","))}
            except ValueError:
                return {}
    return {}


def _requested(params) -> dict[str, int]:
    """Total amount per class over every group."""
    totals: dict[str, int] = {}
    for key, value in params:
        if key.startswith("resources"):
            try:
                for part in value.split(","):
                    rc, n = part.split(":")
                    totals[rc] = totals.get(rc, 0) + int(n)
            except ValueError:
                return {}
    return totals


def _limit(params) -> int | None:
    for key, value in params:
        if key == "limit":
            return int(value)
    return None


def run_scenario(scenario: list, upstream_url: str,
                 allotment_url: str) -> tuple[Difference | None, int]:
    """Replay ``scenario`` on both services; the first difference and the
    number of requests compared."""
    run = f"run{next(_runs)}"
    up, al = Replay(upstream_url, run), Replay(allotment_url, run)
    compared = 0
    try:
        for ex_up, ex_al in zip(up.setup(), al.setup(), strict=True):
            problem = compare(ex_up, ex_al)
            compared += 1
            if problem:
                return Difference(problem, _script(up.log, ex_up), ex_up.answer,
                                  ex_al.answer), compared
        for op in scenario:
            start = len(up.log)
            ex_up, ex_al = up.apply(op), al.apply(op)
            if ex_up is None and ex_al is None:
                continue
            problem = None
            if (ex_up is None) != (ex_al is None):
                problem = "one service could not even send the request"
            elif isinstance(op, O.Query):
                limit = _limit(op.params)
                extra: dict = {}
                if limit is not None:
                    unlimited = tuple(p for p in op.params if p[0] != "limit")
                    extra = {"up_all": up.apply(O.Query(op.version, unlimited)),
                             "al_all": al.apply(O.Query(op.version, unlimited))}
                problem = compare(ex_up, ex_al, unsuffixed=_unsuffixed(op.params),
                                  sharing=up.sharing, limit=limit,
                                  requested=_requested(op.params), tree_roots=up.roots(),
                                  **extra)
            else:
                problem = compare(ex_up, ex_al)
            compared += len(up.log) - start
            if problem:
                return Difference(problem, _script(up.log, ex_up), ex_up.answer,
                                  ex_al.answer), compared
        return None, compared
    finally:
        up.clear()
        al.clear()


def _script(log: list[Exchange], last: Exchange) -> str:
    lines = ["#!/usr/bin/env bash", "URL=${URL:-http://127.0.0.1:8778}"]
    end = next(i for i, ex in enumerate(log) if ex is last)
    for ex in log[:end + 1]:
        if ex.method == "GET" and ex is not last:
            continue
        lines.append(ex.curl())
    return "\n".join(lines)
