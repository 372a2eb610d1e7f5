"""Getting a database ready to serve: schema and standard names."""

from __future__ import annotations

import logging

import os_resource_classes
import os_traits
import sqlalchemy as sa

from allotment import errors
from allotment.engine.codec import Codec
from allotment.storage import migration, resource_classes, traits
from allotment.storage.db import Database
from allotment.world.sync import Replica

LOG = logging.getLogger(__name__)


def prepare_database(db: Database, conf) -> None:
    """Migrate where allowed, then make sure standard classes/traits exist.

    SQLite databases are migrated automatically (the zero-set-up default);
    server databases only with ``[placement_database] sync_on_startup``, as
    upstream does, so that schema changes stay an operator's decision.
    """
    if migration.at_head(db.engine):
        # The usual start: nothing to migrate or refuse, and no Alembic
        # imported into a process that serves.
        sync_standards(db)
        return
    found = migration.state(db.engine)
    # Taking over upstream Placement's database is the operator's decision
    # (after a backup): a start never does it by itself, even on SQLite.
    if found.upstream == migration.UPSTREAM_HEAD and found.own is None:
        raise errors.ServiceUnavailable(
            "The database is upstream Placement's: run 'allotment-manage db sync' "
            "to adopt it (see docs/adopting.md).")
    if db.backend == "sqlite" or conf.placement_database.sync_on_startup:
        try:
            migration.upgrade(db.engine)
        except migration.SchemaError as exc:
            raise errors.ServiceUnavailable(str(exc)) from None
    if migration.current_revision(db.engine) != migration.head_revision(db.engine):
        raise errors.ServiceUnavailable(
            "The database schema is not up to date: run "
            "'allotment-manage db sync'.")
    with db.engine.connect() as conn:
        if not migration.triggers_complete(conn):
            raise errors.ServiceUnavailable(
                "The triggers that report other programs' writes to allotment are "
                "missing: run 'allotment-manage db sync'.")
    sync_standards(db)


def load_world(db: Database, codec: Codec | None = None) -> Replica:
    """This process's copy of ``db``'s provider world, read now, not on
    the first request; ``codec``: what it keeps answers encoded with."""
    replica = Replica(db, codec)
    replica.catch_up()
    return replica


def carry_world(replica: Replica, db: Database, codec: Codec | None = None) -> Replica:
    """A world read before this process forked from its parent, served from
    ``db`` and brought up to date now (the feed after it, not the whole
    world; see world.sync.Replica.carry_to); ``codec``: what it keeps
    answers encoded with from now on."""
    replica.carry_to(db)
    replica.codec = codec
    replica.catch_up()
    return replica


def sync_standards(db: Database) -> None:
    """Add standard resource classes and traits that the database lacks.

    New os-traits / os-resource-classes releases add names; they appear on
    the next start.  Several workers may start at once: whoever loses the
    race simply finds the names already there.
    """
    for attempt in range(3):
        try:
            with db.write() as conn:
                added_rc = resource_classes.sync(conn, os_resource_classes.STANDARDS)
                added_tr = traits.sync(conn, os_traits.get_traits())
            if added_rc or added_tr:
                LOG.info("Added %d standard resource classes and %d standard traits",
                         added_rc, added_tr)
            return
        except sa.exc.IntegrityError:
            if attempt == 2:
                raise
