"""The long run: ``scripts/fault-lab --minutes N``.

Builds a lab per backend and injects faults picked at random (seeded)
until the time is up, each judged as in the short campaign; prints a
line of JSON per fault and, at the end, the table of docs/reliability.md
(fault x backend, summed).  Exits 1 if any fault found a problem.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

from tests.faults.lab.faults import BY_NAME, FAULTS
from tests.faults.lab.lab import Lab, Settings
from tests.faults.lab.runner import Result, run_fault

SUMMED = ("attempted", "acknowledged", "lost_by_database", "lost_by_allotment",
          "refused_stored", "over_capacity", "workers_out_of_step", "workers_unavailable",
          "status_503", "bad_5xx",
          "proxy_5xx", "feed_rows_lost")


def table(rows: list[dict]) -> str:
    """The rows of several runs (Result.row(), or --out's lines), summed."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    skipped: dict[tuple[str, str], str] = {}
    for row in rows:
        if row.get("skipped"):
            skipped[row["fault"], row["backend"]] = row["skipped"]
        else:
            groups[row["fault"], row["backend"]].append(row)
    lines = ["| fault | backend | runs | writes attempted | acknowledged | lost by the "
             "database | lost by allotment | refused stored | over capacity | worlds out "
             "of step after healing | workers unavailable at that look (503 or no answer) "
             "| longest to be in step (s) | 503 | other 5xx or no answer in 30 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (fault, backend), rows in sorted(groups.items()):
        s = {k: sum(row.get(k) or 0 for row in rows) for k in SUMMED}
        errors = [row["error"] for row in rows if row.get("error")]
        times = [row.get("in_step_after_s") for row in rows if not row.get("error")]
        longest = "never" if None in times else f"{max(times or [0]):.1f}"
        runs = f"{len(rows)} (lab errors: {len(errors)})" if errors else str(len(rows))
        lines.append(
            f"| {fault} | {backend} | {runs}"
            f" | {s['attempted']} | {s['acknowledged']} | {s['lost_by_database']}"
            f" (feed rows lost: {s['feed_rows_lost']}) | {s['lost_by_allotment']}"
            f" | {s['refused_stored']} | {s['over_capacity']} | {s['workers_out_of_step']}"
            f" | {s['workers_unavailable']} | {longest} | {s['status_503']} | {s['bad_5xx']} |")
    for (fault, backend), reason in sorted(skipped.items()):
        lines.append(f"| {fault} | {backend} | skipped: {reason} ||||||||||||")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/fault-lab")
    parser.add_argument("--minutes", type=float, default=10.0,
                        help="how long to inject faults, per backend")
    parser.add_argument("--backend", choices=["galera", "postgres", "both"], default="both")
    parser.add_argument("--flush", type=int, default=1, choices=[0, 1, 2],
                        help="Galera: innodb_flush_log_at_trx_commit")
    parser.add_argument("--flush-timeout", type=int, default=1,
                        help="Galera: innodb_flush_log_at_timeout (s)")
    parser.add_argument("--synchronous-commit", default="on",
                        help="PostgreSQL: synchronous_commit")
    parser.add_argument("--synchronous-standby", action="store_true",
                        help="PostgreSQL: synchronous_standby_names = '*' (commits wait "
                        "for the replica)")
    parser.add_argument("--wal-writer-delay", type=int, default=200,
                        help="PostgreSQL: wal_writer_delay (ms)")
    parser.add_argument("--faults", default="",
                        help="comma-separated fault names (default: all); "
                        + ", ".join(f.name for f in FAULTS))
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write every fault's result here (JSON lines)")
    parser.add_argument("--keep", action="store_true", help="keep the lab's directory")
    parser.add_argument("--table", nargs="+", type=Path, metavar="FILE",
                        help="only print the table of earlier runs' --out files")
    args = parser.parse_args()
    if args.table:
        print(table([json.loads(line) for path in args.table
                     for line in path.read_text().splitlines() if line.strip()]))
        return 0
    rnd = random.Random(args.seed)
    names = [n for n in args.faults.split(",") if n] or [f.name for f in FAULTS]
    backends = ["galera", "postgres"] if args.backend == "both" else [args.backend]
    results: list[Result] = []
    for backend in backends:
        settings = Settings(backend, flush=args.flush, flush_timeout=args.flush_timeout,
                            synchronous_commit=args.synchronous_commit,
                            wal_writer_delay_ms=args.wal_writer_delay,
                            synchronous_standby=args.synchronous_standby)
        faults = [BY_NAME[n] for n in names if backend in BY_NAME[n].backends]
        lab = Lab(settings)
        print(f"# {backend}: {settings} in {lab.directory}", flush=True)
        lab.start()
        try:
            until = time.monotonic() + args.minutes * 60
            while time.monotonic() < until and faults:
                fault = rnd.choice(faults)
                try:
                    result = run_fault(lab, fault, hold=rnd.uniform(3, 10),
                                       clients=args.clients, seed=rnd.randrange(10**6))
                except Exception as exc:  # the lab's own failure: reported, run ends
                    result = Result(fault.name, fault.cls, backend,
                                    error=f"{type(exc).__name__}: {exc}")
                results.append(result)
                row = {**result.row(), "problems": result.problems()[:10]}
                print(json.dumps(row, default=str), flush=True)
                if args.out:
                    with args.out.open("a") as out:
                        out.write(json.dumps(row, default=str) + "\n")
                if result.error:
                    break
                if result.skipped:
                    faults = [f for f in faults if f is not fault]
        finally:
            lab.stop()
            if not args.keep:
                lab.remove()
    print(table([r.row() for r in results]))
    return 1 if any(r.problems() for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
