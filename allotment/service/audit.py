"""The consistency audit: what is found, what ``--fix`` repairs, and the
counts /metrics exports.

Repaired (nothing is lost):

* consumers without allocations are deleted, as Placement deletes a
  consumer when its last allocation goes;
* a provider whose stored root is not the top of its parent chain gets that
  root (the root is derived from the parents, nothing else depends on the
  stored value).

Reported only (a repair would drop or invent data): usage above capacity,
allocations whose consumer, project or user row is gone, trees whose parents
form a cycle, sharing providers that serve no tree.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field

from allotment.service.placement_metrics import escape
from allotment.storage import audit as store
from allotment.storage.db import Database

CHECKS = ("over_capacity", "consumers_without_allocations", "allocations_without_owner",
          "bad_roots", "lonely_sharing")


@dataclass
class Report:
    over_capacity: list[store.UsageOverCapacity] = field(default_factory=list)
    consumers_without_allocations: list[str] = field(default_factory=list)
    allocations_without_owner: list[store.WithoutOwner] = field(default_factory=list)
    bad_roots: list[store.BadRoot] = field(default_factory=list)
    lonely_sharing: list[store.LonelySharing] = field(default_factory=list)
    # What --fix repaired, by check.
    repaired: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {check: len(getattr(self, check)) for check in CHECKS}

    def found(self) -> int:
        return sum(self.counts().values())

    def unrepaired(self) -> int:
        return sum(max(0, n - self.repaired.get(check, 0))
                   for check, n in self.counts().items())

    def as_dict(self) -> dict:
        body = {check: [x if isinstance(x, str) else asdict(x) for x in getattr(self, check)]
                for check in CHECKS}
        for finding in body["over_capacity"]:
            finding["over"] = finding["used"] - finding["capacity"]
        body["repaired"] = dict(self.repaired)
        return body


def run(db: Database) -> Report:
    """Every check, read in one snapshot."""
    with db.read() as conn:
        return Report(
            over_capacity=store.over_capacity(conn),
            consumers_without_allocations=store.consumers_without_allocations(conn),
            allocations_without_owner=store.allocations_without_owner(conn),
            bad_roots=[f for _, _, f in store.bad_roots(conn)],
            lonely_sharing=store.lonely_sharing(conn),
        )


def repair(db: Database) -> Report:
    """Run the audit and repair what can be repaired without loss, in one
    write transaction that checks again what it repairs."""
    report = run(db)
    if not (report.consumers_without_allocations or report.bad_roots):
        return report
    with db.write() as conn:
        deleted = store.delete_consumers_without_allocations(
            conn, report.consumers_without_allocations)
        roots = [(pid, root) for pid, root, _ in store.bad_roots(conn) if root is not None]
        fixed = store.set_roots(conn, roots)
    report.repaired = {"consumers_without_allocations": deleted, "bad_roots": fixed}
    return report


class Cached:
    """The latest audit of one database, run again at most every
    ``interval`` seconds (for /metrics: the audit reads every allocation)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: dict[int, tuple[float, Report]] = {}

    def get(self, db: Database, interval: float) -> Report:
        with self._lock:
            now = time.monotonic()
            kept = self._at.get(id(db))
            if kept is None or now - kept[0] >= interval:
                kept = self._at[id(db)] = (now, run(db))
            return kept[1]

    def clear(self) -> None:
        with self._lock:
            self._at.clear()


CACHE = Cached()


def metrics_text(report: Report) -> str:
    """The audit's findings in Prometheus's text format."""
    lines = ["# HELP allotment_audit_findings Inconsistencies the last audit found, "
             "by check.\n# TYPE allotment_audit_findings gauge\n"]
    lines += [f'allotment_audit_findings{{check="{check}"}} {n}\n'
              for check, n in report.counts().items()]
    lines.append("# HELP allotment_audit_over_capacity Amount by which a provider's "
                 "usage of a class exceeds its capacity.\n"
                 "# TYPE allotment_audit_over_capacity gauge\n")
    lines += [f'allotment_audit_over_capacity{{hostname="{escape(f.name)}",'
              f'resourcetype="{escape(f.resource_class)}"}} {f.over}\n'
              for f in report.over_capacity]
    return "".join(lines)
