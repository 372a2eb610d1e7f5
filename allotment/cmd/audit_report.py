"""``allotment-manage audit``: the consistency audit, as a report."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from allotment.service import audit
from allotment.storage.db import Database

_TITLES = {
    "over_capacity": "Providers using more than their capacity",
    "consumers_without_allocations": "Consumers without allocations",
    "allocations_without_owner": "Allocations whose consumer, project or user is missing",
    "bad_roots": "Providers whose stored root disagrees with their parents",
    "lonely_sharing": "Sharing providers that serve no tree",
}


def _lines(report: audit.Report) -> list[str]:
    out = []
    for f in report.over_capacity:
        out.append(f"  {f.name} ({f.provider}) {f.resource_class}: used {f.used}, "
                   f"capacity {f.capacity}, over by {f.over}")
    for uuid in report.consumers_without_allocations:
        out.append(f"  {uuid}")
    for f in report.allocations_without_owner:
        out.append(f"  consumer {f.consumer}: {f.missing} row missing "
                   f"({f.allocations} allocations)")
    for f in report.bad_roots:
        expected = f.expected_root or "none: its parents form a cycle"
        out.append(f"  {f.name} ({f.provider}): root {f.stored_root or 'unset'}, "
                   f"expected {expected}")
    for f in report.lonely_sharing:
        aggs = ", ".join(f.aggregates) or "no aggregate"
        out.append(f"  {f.name} ({f.provider}): aggregates {aggs}")
    return out


def write_text(report: audit.Report, out: TextIO) -> None:
    for check in audit.CHECKS:
        findings = getattr(report, check)
        line = f"{_TITLES[check]}: {len(findings)}"
        if check in report.repaired:
            line += f" ({report.repaired[check]} repaired)"
        out.write(line + "\n")
        if findings:
            sub = audit.Report(**{check: findings})
            out.write("\n".join(_lines(sub)) + "\n")
    if not report.found():
        out.write("No inconsistency found.\n")
    elif report.unrepaired():
        out.write(f"{report.unrepaired()} finding(s) left; see docs/operating.md.\n")


def main(db: Database, *, fix: bool, fmt: str, out: TextIO | None = None) -> int:
    """Exit status: 0 when nothing is left to look at, 1 otherwise."""
    out = out or sys.stdout
    report = audit.repair(db) if fix else audit.run(db)
    if fmt == "json":
        out.write(json.dumps(report.as_dict(), indent=2, sort_keys=True) + "\n")
    else:
        write_text(report, out)
    return 1 if report.unrepaired() else 0
