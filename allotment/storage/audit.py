"""SQL of the consistency audit (``allotment-manage audit``).

Each check is one or two bulk reads; the judgement (what counts as a
finding) is made in Python so that it is the same on every backend, with
capacity computed exactly as the API computes it.  Allocations are put next
to their consumers only through ``storage.consumer_join``.  The two repairs
that lose nothing are here too, each guarded so that it changes only rows
still in the state the audit saw.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import consumer_join, feed
from allotment.storage.tables import (
    allocations,
    consumers,
    inventories,
    placement_aggregates,
    projects,
    resource_classes,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
    traits,
    users,
)

SHARES_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass(frozen=True)
class UsageOverCapacity:
    """A provider using more of a class than it has room for."""

    provider: str  # UUID
    name: str
    resource_class: str
    used: int
    capacity: int  # 0 when the provider has no inventory of the class

    @property
    def over(self) -> int:
        return self.used - self.capacity


@dataclass(frozen=True)
class WithoutOwner:
    consumer: str  # UUID, or the key allocations hold when the row is gone
    missing: str  # "consumer", "project" or "user"
    allocations: int


@dataclass(frozen=True)
class BadRoot:
    provider: str
    name: str
    stored_root: str | None  # UUID, None when unset or dangling
    expected_root: str | None  # None when the parents form a cycle


@dataclass(frozen=True)
class LonelySharing:
    provider: str
    name: str
    aggregates: tuple[str, ...]


def capacity(total: int, reserved: int, ratio: float) -> int:
    """As the API counts it: ``(total - reserved) * allocation_ratio``."""
    return int((total - reserved) * ratio)


def over_capacity(conn: Connection) -> list[UsageOverCapacity]:
    """(provider, class) pairs whose allocations exceed capacity, including
    allocations of a class the provider has no inventory of."""
    usage = (sa.select(allocations.c.resource_provider_id.label("rp"),
                       allocations.c.resource_class_id.label("rc"),
                       sa.func.sum(allocations.c.used).label("used"))
             .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id)
             .subquery())
    rows = conn.execute(
        sa.select(resource_providers.c.uuid, resource_providers.c.name,
                  resource_classes.c.name, usage.c.used, inventories.c.total,
                  inventories.c.reserved, inventories.c.allocation_ratio)
        .select_from(
            usage.join(resource_providers, usage.c.rp == resource_providers.c.id)
            .join(resource_classes, usage.c.rc == resource_classes.c.id)
            .outerjoin(inventories, sa.and_(
                inventories.c.resource_provider_id == usage.c.rp,
                inventories.c.resource_class_id == usage.c.rc))))
    found = []
    for uuid, name, rc, used, total, reserved, ratio in rows:
        cap = 0 if total is None else capacity(total, reserved, ratio)
        if int(used) > cap:
            found.append(UsageOverCapacity(uuid, name, rc, int(used), cap))
    return sorted(found, key=lambda f: (f.name, f.resource_class))


def consumers_without_allocations(conn: Connection) -> list[str]:
    held = sa.exists().where(consumer_join.condition())
    return sorted(conn.execute(sa.select(consumers.c.uuid).where(~held)).scalars())


def allocations_without_owner(conn: Connection) -> list[WithoutOwner]:
    """Allocations whose consumer row is gone, or whose consumer names a
    project or user row that is gone."""
    key = consumer_join.consumer_key()
    orphans = conn.execute(
        sa.select(key, sa.func.count())
        .where(~sa.exists().where(consumer_join.condition()))
        .group_by(key))
    found = [WithoutOwner(str(k), "consumer", int(n)) for k, n in orphans]
    for table, column, what in ((projects, consumers.c.project_id, "project"),
                                (users, consumers.c.user_id, "user")):
        rows = conn.execute(
            sa.select(consumers.c.uuid, sa.func.count())
            .select_from(consumers.join(allocations, consumer_join.condition()))
            .where(~sa.exists().where(table.c.id == column))
            .group_by(consumers.c.uuid))
        found.extend(WithoutOwner(uuid, what, int(n)) for uuid, n in rows)
    return sorted(found, key=lambda f: (f.missing, f.consumer))


def _providers(conn: Connection) -> dict[int, tuple]:
    rp = resource_providers.c
    return {row[0]: row[1:] for row in conn.execute(
        sa.select(rp.id, rp.uuid, rp.name, rp.parent_provider_id, rp.root_provider_id))}


def _expected_root(pid: int, parent_of: dict[int, int | None]) -> int | None:
    seen = set()
    while True:
        parent = parent_of.get(pid)
        if parent is None or parent not in parent_of:
            return pid
        if pid in seen:
            return None  # a cycle: no root at all
        seen.add(pid)
        pid = parent


def bad_roots(conn: Connection) -> list[tuple[int, int | None, BadRoot]]:
    """Providers whose stored root is not the top of their parent chain:
    ``(id, expected root id, finding)``."""
    rows = _providers(conn)
    parent_of = {pid: r[2] for pid, r in rows.items()}
    found = []
    for pid, (uuid, name, _parent, root) in rows.items():
        expected = _expected_root(pid, parent_of)
        if root != expected or expected is None:
            stored = rows[root][0] if root in rows else None
            found.append((pid, expected, BadRoot(
                uuid, name, stored, None if expected is None else rows[expected][0])))
    return sorted(found, key=lambda f: f[2].name)


def lonely_sharing(conn: Connection) -> list[LonelySharing]:
    """Sharing providers none of whose aggregates holds a provider of
    another tree: they share with nobody."""
    rows = _providers(conn)
    parent_of = {pid: r[2] for pid, r in rows.items()}
    sharing = set(conn.execute(
        sa.select(resource_provider_traits.c.resource_provider_id)
        .select_from(resource_provider_traits.join(
            traits, traits.c.id == resource_provider_traits.c.trait_id))
        .where(traits.c.name == SHARES_TRAIT)).scalars())
    if not sharing:
        return []
    members: dict[str, set[int]] = defaultdict(set)
    aggs_of: dict[int, set[str]] = defaultdict(set)
    for pid, agg in conn.execute(
            sa.select(resource_provider_aggregates.c.resource_provider_id,
                      placement_aggregates.c.uuid)
            .select_from(resource_provider_aggregates.join(
                placement_aggregates,
                placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id))):
        members[agg].add(pid)
        aggs_of[pid].add(agg)
    found = []
    for pid in sharing:
        if pid not in rows:
            continue
        tree = _expected_root(pid, parent_of)
        served = any(_expected_root(other, parent_of) != tree
                     for agg in aggs_of.get(pid, ()) for other in members[agg])
        if not served:
            uuid, name = rows[pid][0], rows[pid][1]
            found.append(LonelySharing(uuid, name, tuple(sorted(aggs_of.get(pid, ())))))
    return sorted(found, key=lambda f: f.name)


# -- repairs -------------------------------------------------------------------

def delete_consumers_without_allocations(conn: Connection, uuids: Iterable[str]) -> int:
    """Delete these consumers if they still hold nothing; how many went.

    A consumer with no allocation is what Placement itself deletes when a
    consumer's last allocation goes: nothing is lost.
    """
    wanted = sorted(set(uuids))
    if not wanted:
        return 0
    held = sa.exists().where(consumer_join.condition())
    return conn.execute(sa.delete(consumers).where(
        consumers.c.uuid.in_(wanted), ~held)).rowcount


def set_roots(conn: Connection, repairs: Iterable[tuple[int, int]]) -> int:
    """Set each provider's stored root to the top of its parent chain
    (``(provider id, root id)``), and have every process reload its world."""
    count = 0
    for pid, root in repairs:
        count += conn.execute(sa.update(resource_providers)
                              .where(resource_providers.c.id == pid)
                              .values(root_provider_id=root)).rowcount
    if count:
        feed.note_reset(conn)
    return count
