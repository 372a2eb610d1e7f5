"""Online data migrations: repairs run while the service keeps serving.

Upstream's ``placement-manage db online_data_migrations`` runs, in batches,
functions that each take a batch size and answer ``(found, done)``: how
many rows needed the change (up to the batch size) and how many were
changed.  allotment's schema needs no data migration of its own; what it
runs under that command is the one repair of upstream's list that still
means something on a database upstream or older programs wrote: stored
root providers that are not the top of the provider's parent chain (a
provider tree's root is derived from its parents here, and every API
process reloads its world after the repair).  Providers whose parents form
a cycle have no root to set: they are found but never done, which is what
tells the command to stop.
"""

from __future__ import annotations

from collections.abc import Callable

from allotment.storage import audit as store
from allotment.storage.db import Database


def set_root_provider_ids(db: Database, count: int) -> tuple[int, int]:
    """Repair at most ``count`` stored roots; ``(found, done)``."""
    with db.read() as conn:
        found = store.bad_roots(conn)[:count]
    if not found:
        return 0, 0
    wanted = {pid for pid, _root, _finding in found}
    with db.write() as conn:
        # Found again inside the write: only what is still wrong is changed.
        repairs = [(pid, root) for pid, root, _ in store.bad_roots(conn)
                   if pid in wanted and root is not None]
        done = store.set_roots(conn, repairs)
    return len(found), done


# In the order they run, as upstream's command lists them.
MIGRATIONS: tuple[Callable[[Database, int], tuple[int, int]], ...] = (
    set_root_provider_ids,
)
