"""Usage totals of a project (and optionally a user), GET /usages."""

from __future__ import annotations

from collections import defaultdict

from allotment.storage import allocations as store
from allotment.storage.db import Database

# Consumers written before consumer types existed are grouped under this.
UNKNOWN = "unknown"
# A consumer_type filter meaning "every type, as one group".
ALL = "all"


def of_project(db: Database, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """Amount used per resource class, whatever the consumer type."""
    with db.read() as conn:
        rows = store.usages_of_project(conn, project_id, user_id)
    totals: dict[str, int] = defaultdict(int)
    for row in rows:
        totals[row.resource_class] += int(row.used)
    return dict(totals)


def of_project_by_type(db: Database, project_id: str, user_id: str | None = None,
                       consumer_type: str | None = None) -> dict[str, dict[str, int]]:
    """Per consumer type: amount used per class plus ``consumer_count``.

    ``consumer_type`` narrows to one type; "all" folds every type into one
    group named "all"; "unknown" is the group of consumers without a type.
    """
    with db.read() as conn:
        rows = store.usages_of_project(conn, project_id, user_id)
        counts = store.consumer_counts_of_project(conn, project_id, user_id)
    groups: dict[str, dict[str, int]] = {}
    for row in rows:
        name = row.consumer_type or UNKNOWN
        if consumer_type == ALL:
            name = ALL
        elif consumer_type is not None and name != consumer_type:
            continue
        group = groups.setdefault(name, defaultdict(int))
        group[row.resource_class] += int(row.used)
    for name, group in groups.items():
        if name == ALL:
            group["consumer_count"] = sum(counts.values())
        else:
            group["consumer_count"] = counts.get(None if name == UNKNOWN else name, 0)
    return {name: dict(group) for name, group in groups.items()}
