"""The topology version: a counter every change to the provider world bumps.

"Topology" is everything the allocation-candidate search reads except usage:
providers, their parents and names, inventories, traits, aggregates and the
names of resource classes.  Each storage function that writes any of these
calls :func:`bump` inside the caller's transaction, so a reader that sees
version N in its own transaction sees exactly the world of version N.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage.tables import placement_state

_ROW = placement_state.c.id == 1


def bump_topology(conn: Connection) -> None:
    """Advance the version; call in the transaction making the change.

    On PostgreSQL the UPDATE takes the row lock until commit, so two writers
    can never both move N to N+1: the second waits and then reads N+1.
    """
    conn.execute(sa.update(placement_state).where(_ROW)
                 .values(topology_version=placement_state.c.topology_version + 1))


def topology_version(conn: Connection) -> int:
    return int(conn.execute(
        sa.select(placement_state.c.topology_version).where(_ROW)).scalar_one())
