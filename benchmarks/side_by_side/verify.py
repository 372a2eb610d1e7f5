"""After a scheduling run: did the service keep its books?

Two things must hold whatever the service's speed: no inventory is used
past its capacity, and the consumers the mix holds in the service are
exactly those it was told were granted, minus those it was told were
deleted (no claim lost, none left over, none resurrected), with the
project's usages (``GET /usages``) the sum of what those consumers were
granted.  The database is read directly (both services keep upstream's
schema), so a service cannot vouch for itself from a cache.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import sqlalchemy as sa

from allotment.storage import db as db_mod


@dataclass
class Books:
    """What the service holds, as read back after the run."""

    # (provider uuid, resource class) -> (total, reserved, allocation_ratio)
    inventories: dict[tuple[str, str], tuple[int, int, float]]
    # (provider uuid, resource class) -> used, over every consumer
    used: dict[tuple[str, str], int]
    # consumers of the mix's project holding allocations
    held: set[str]
    # GET /usages?project_id=<the mix's project>
    project_usages: dict[str, int]


@dataclass
class Verdict:
    over_capacity: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # granted, not deleted, not held
    extra: list[str] = field(default_factory=list)  # held, yet deleted or never granted
    usages: dict[str, tuple[int, int]] = field(default_factory=dict)  # rc -> (want, got)

    @property
    def ok(self) -> bool:
        return not (self.over_capacity or self.lost or self.extra or self.usages)

    def summary(self) -> str:
        if self.ok:
            return "held"
        parts = []
        if self.over_capacity:
            parts.append(f"{len(self.over_capacity)} inventories over capacity "
                         f"({', '.join(self.over_capacity[:3])})")
        if self.lost:
            parts.append(f"{len(self.lost)} granted consumers missing")
        if self.extra:
            parts.append(f"{len(self.extra)} consumers held that should not be")
        if self.usages:
            parts.append("project usages " + ", ".join(
                f"{rc} {got} (want {want})" for rc, (want, got) in self.usages.items()))
        return "FAILED: " + "; ".join(parts)


def check(books: Books, granted: dict[str, dict], deleted: set[str]) -> Verdict:
    """Compare ``books`` with what the mix was told (``granted``: uuid -> allocations)."""
    verdict = Verdict()
    for key, used in sorted(books.used.items()):
        total, reserved, ratio = books.inventories.get(key, (0, 0, 0.0))
        if used > (total - reserved) * ratio:
            verdict.over_capacity.append(f"{key[0]} {key[1]} {used}")
    live = set(granted) - deleted
    verdict.lost = sorted(live - books.held)
    verdict.extra = sorted(books.held - live)
    want: Counter = Counter()
    for consumer in live:
        for alloc in granted[consumer].values():
            want.update(alloc["resources"])
    for rc in set(want) | set(books.project_usages):
        if want.get(rc, 0) != books.project_usages.get(rc, 0):
            verdict.usages[rc] = (want.get(rc, 0), books.project_usages.get(rc, 0))
    return verdict


def read(database_url: str, project: str, project_usages: dict[str, int]) -> Books:
    """The books of the database at ``database_url`` (upstream's schema)."""
    engine = sa.create_engine(db_mod.normalise_url(database_url))
    try:
        with engine.connect() as conn:
            inventories = {
                (u, rc): (total, reserved, ratio) for u, rc, total, reserved, ratio in
                conn.execute(sa.text(
                    "SELECT rp.uuid, rc.name, i.total, i.reserved, i.allocation_ratio "
                    "FROM inventories i JOIN resource_providers rp "
                    "ON rp.id = i.resource_provider_id "
                    "JOIN resource_classes rc ON rc.id = i.resource_class_id"))}
            used = {(u, rc): int(n) for u, rc, n in conn.execute(sa.text(
                "SELECT rp.uuid, rc.name, SUM(a.used) FROM allocations a "
                "JOIN resource_providers rp ON rp.id = a.resource_provider_id "
                "JOIN resource_classes rc ON rc.id = a.resource_class_id "
                "GROUP BY rp.uuid, rc.name"))}
            held = set(conn.execute(sa.text(
                "SELECT DISTINCT a.consumer_id FROM allocations a "
                "JOIN consumers c ON c.uuid = a.consumer_id "
                "JOIN projects p ON p.id = c.project_id WHERE p.external_id = :p"),
                {"p": project}).scalars())
    finally:
        engine.dispose()
    return Books(inventories, used, held, project_usages)
