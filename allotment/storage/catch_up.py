"""What a process reads to catch up with a change of topology.

When the change feed names trees that changed, a process reads the feed
again and those trees inside one snapshot, so that the world it builds is
the database as of that snapshot.  On PostgreSQL the transaction's BEGIN,
the feed's rows and the four statements that read the trees go to the
server together (one round trip instead of six); elsewhere they run one
after the other.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.engine import Connection

from allotment.storage import direct, feed
from allotment.storage import loader as store
from allotment.storage.loader import LoadedProvider


def read(conn: Connection, position: feed.Position, also: Iterable[int],
         root_ids: Iterable[int]) -> tuple[feed.Tail, dict[int, LoadedProvider]]:
    """The feed's rows after ``position`` (and those among ``also``), unless
    the database went back past it, and the trees with the roots
    ``root_ids`` as :func:`loader.load` reads them.

    The trees are the ones the caller expects the rows to name; rows that
    name others (written since the caller last looked) are the caller's to
    read, in the same transaction.
    """
    results = direct.together(conn, [feed.query(conn, position, also),
                                     *store.tree_queries(conn, root_ids)])
    found = feed.tail(results[0], position, epochs=conn.dialect.name == "postgresql")
    return found, store.assemble(results[1:])
