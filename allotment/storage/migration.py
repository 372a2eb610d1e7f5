"""Schema migrations with Alembic, driven from code (no alembic.ini needed).

allotment's schema is upstream Placement's (its tables at upstream's
revision ``a082b8bb98d0``) plus tables and triggers of allotment's own, in
two Alembic histories:

* upstream's tables, versioned where upstream versions them
  (``alembic_version``): created on an empty database, and otherwise left
  at upstream's revision, so that upstream's processes and its
  ``placement-manage db sync`` find their schema current while both serve
  one database;
* allotment's additions, versioned in ``allotment_version``.  Adding them to
  a database upstream filled is *adoption*; removing them is the hand-back
  (:func:`hand_back`).

Anything else is refused before a single statement changes it
(:func:`check`): an upstream database at an older revision, one whose
upstream tables are damaged, one that is neither's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from alembic.config import Config

from allotment.storage import foreign, legacy, tables

_HERE = os.path.dirname(os.path.abspath(__file__))
# Upstream Placement's last revision, which allotment's schema builds on.
UPSTREAM_HEAD = "a082b8bb98d0"
# Upstream's earlier revisions, oldest first.
UPSTREAM_OLDER = ("b4ed3a175331", "611cd6dffd7b", "b5c396305c25", "422ece571366")
# allotment's own schema before it became upstream's (see storage/legacy.py),
# versioned in alembic_version.
LEGACY = ("0001", "0002", "0003", "0004")
# allotment's last revision (migrations/versions/; a test holds the two
# together): a database already there is told apart without Alembic, which
# (with Mako and Pygments) a serving process would otherwise carry for good.
OWN_HEAD = "allotment_0002"
UPSTREAM_VERSIONS = "alembic_version"
OWN_VERSIONS = "allotment_version"


class SchemaError(Exception):
    """The database cannot be migrated as it is; the message says why and
    what to do.  Nothing was changed."""


def alembic_config(engine: Engine, *, upstream: bool = False) -> Config:
    from alembic.config import Config

    cfg = Config()
    where = "upstream_schema" if upstream else "migrations"
    cfg.set_main_option("script_location", os.path.join(_HERE, where))
    cfg.attributes["engine"] = engine
    cfg.attributes["version_table"] = UPSTREAM_VERSIONS if upstream else OWN_VERSIONS
    return cfg


def _revision(conn, version_table: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(
        conn, opts={"version_table": version_table}).get_current_revision()


def current_revision(engine: Engine) -> str | None:
    """allotment's schema revision (None: not allotment's, or not yet)."""
    with engine.connect() as conn:
        return _revision(conn, OWN_VERSIONS)


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


@dataclass(frozen=True)
class State:
    """What a database holds, as far as its schema goes."""

    upstream: str | None  # revision in alembic_version
    own: str | None  # revision in allotment_version
    tables: frozenset[str]

    @property
    def empty(self) -> bool:
        return (self.upstream is None and self.own is None
                and not (self.tables - {UPSTREAM_VERSIONS, OWN_VERSIONS}))


def state(engine: Engine) -> State:
    with engine.connect() as conn:
        return State(_revision(conn, UPSTREAM_VERSIONS), _revision(conn, OWN_VERSIONS),
                     frozenset(sa.inspect(conn).get_table_names()))


def check(engine: Engine) -> State:
    """The database's state, if :func:`upgrade` may migrate it.

    :raises SchemaError: saying why not and what to do; nothing is changed.
    """
    found = state(engine)
    if found.empty:
        return found
    revision = found.upstream
    if revision in UPSTREAM_OLDER:
        raise SchemaError(
            f"This is upstream Placement's database at its schema revision {revision}, "
            f"older than the {UPSTREAM_HEAD} that allotment takes over. Bring it up to "
            "date with upstream's own tool first ('placement-manage db sync' of "
            "openstack-placement 16.0.0, after 'placement-manage db "
            "online_data_migrations' where it asks for it), then run "
            "'allotment-manage db sync' again. Nothing was changed.")
    if revision in LEGACY:
        return found
    if revision is None:
        raise SchemaError(
            "This database holds tables (" + ", ".join(sorted(found.tables)[:8])
            + (", ..." if len(found.tables) > 8 else "") + ") but no Placement schema "
            "version: it is neither upstream Placement's nor allotment's. Point "
            "[placement_database] connection at Placement's database, or at an empty "
            "one. Nothing was changed.")
    from alembic.script import ScriptDirectory

    known = {rev.revision for rev in
             ScriptDirectory.from_config(alembic_config(engine)).walk_revisions()}
    if revision != UPSTREAM_HEAD or (found.own is not None and found.own not in known):
        raise SchemaError(
            f"This database's schema is at revision {found.own or revision}, which is "
            "neither upstream Placement 16.0.0's nor one this allotment knows (a newer "
            "upstream or allotment, or another program's database?). Nothing was changed.")
    damage = _damage(engine)
    if damage:
        raise SchemaError(
            "Placement's tables in this database are not as its schema revision "
            f"{revision} has them: " + "; ".join(damage) + ". Restore it from a "
            "backup, or repair it, before running this again. Nothing was changed.")
    return found


def _damage(engine: Engine) -> list[str]:
    """What is missing of upstream's tables and columns."""
    inspector = sa.inspect(engine)
    present = set(inspector.get_table_names())
    found = []
    for table in tables.UPSTREAM_TABLES:
        if table.name not in present:
            found.append(f"table {table.name} is missing")
            continue
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        missing = [c.name for c in table.columns if c.name not in columns]
        if missing:
            found.append(f"{table.name} lacks column(s) {', '.join(missing)}")
    return found


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Create, adopt or migrate (see the module's doc).

    :raises SchemaError: the database is not one this can migrate.
    """
    from alembic import command

    found = check(engine)
    if found.upstream in LEGACY:
        legacy.convert(engine, lambda conn: _create_upstream(engine, conn))
    elif found.empty:
        command.upgrade(alembic_config(engine, upstream=True), UPSTREAM_HEAD)
    command.upgrade(alembic_config(engine), revision)
    with engine.begin() as conn:
        if not triggers_complete(conn):
            # Gone since (a hand-back that stopped part way on MySQL, a
            # restore that left them out): without them other writers'
            # changes would never reach the world.
            foreign.install(conn)


def _create_upstream(engine: Engine, conn) -> None:
    """Upstream's tables, on ``conn`` (inside the caller's transaction)."""
    from alembic import command

    conn.exec_driver_sql(f"DELETE FROM {UPSTREAM_VERSIONS}")
    cfg = alembic_config(engine, upstream=True)
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, UPSTREAM_HEAD)


def at_head(engine: Engine) -> bool:
    """Whether the database is allotment's at its last revision, undamaged
    and with its triggers in place: nothing :func:`upgrade` would change and
    nothing :func:`check` refuses, told with SQL alone (no Alembic)."""
    with engine.connect() as conn:
        present = set(sa.inspect(conn).get_table_names())
        if not {UPSTREAM_VERSIONS, OWN_VERSIONS} <= present:
            return False
        for table, head in ((UPSTREAM_VERSIONS, UPSTREAM_HEAD), (OWN_VERSIONS, OWN_HEAD)):
            rows = conn.exec_driver_sql(f"SELECT version_num FROM {table}").all()
            if [tuple(row) for row in rows] != [(head,)]:
                return False
        if not triggers_complete(conn):
            return False
    return not _damage(engine)


def triggers_complete(conn) -> bool:
    """Whether every trigger reporting other writers is in place."""
    return foreign.installed(conn) >= {name for name, _, _ in foreign.all_triggers()}


def hand_back(engine: Engine) -> None:
    """Return the database to upstream Placement's schema at
    ``a082b8bb98d0``, every row kept: what ``db downgrade upstream`` does.

    :raises SchemaError: the database is not one allotment serves.
    """
    from alembic import command

    found = check(engine)
    if found.empty or found.upstream in LEGACY:
        raise SchemaError(
            "Only a database at allotment's current schema can be handed back: run "
            "'allotment-manage db sync' first. Nothing was changed.")
    if engine.dialect.name == "mysql" and found.own is not None:
        merged = _merged_by_old_collations(engine)
        if merged:
            raise SchemaError(
                "These names differ only in ways the tables' collations before "
                "adoption do not tell apart (letter case, accents, trailing spaces), "
                "so upstream's unique keys would refuse them: " + "; ".join(merged)
                + ". Rename or remove one of each, then run this again. Nothing was "
                "changed.")
    if found.own is not None:
        command.downgrade(alembic_config(engine), "base")
    with engine.begin() as conn:
        if sa.inspect(conn).has_table(OWN_VERSIONS):
            conn.exec_driver_sql(f"DROP TABLE {OWN_VERSIONS}")


# Columns under a unique key whose values are text.
_UNIQUE_TEXT = (("resource_providers", "name"), ("resource_providers", "uuid"),
                ("resource_classes", "name"), ("traits", "name"),
                ("consumer_types", "name"), ("projects", "external_id"),
                ("users", "external_id"), ("consumers", "uuid"),
                ("placement_aggregates", "uuid"))


def _merged_by_old_collations(engine: Engine) -> list[str]:
    """Values that are two under allotment's binary collation and would be
    one under the collation each table had before adoption (MySQL)."""
    found = []
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("allotment_adoption"):
            return []
        old = dict(conn.execute(sa.text(
            "SELECT a.table_name, CONCAT(c.character_set_name, ' ', a.original_collation) "
            "FROM allotment_adoption a JOIN information_schema.collations c "
            "ON c.collation_name = a.original_collation")).all())
        for table, column in _UNIQUE_TEXT:
            if table not in old:
                continue
            charset, collation = old[table].split()
            key = f"CONVERT(`{column}` USING {charset}) COLLATE {collation}"
            for (values,) in conn.execute(sa.text(
                    f"SELECT GROUP_CONCAT(`{column}` ORDER BY `{column}` SEPARATOR ' / ') "
                    f"FROM `{table}` WHERE `{column}` IS NOT NULL GROUP BY {key} "
                    "HAVING COUNT(*) > 1")):
                found.append(f"{table}.{column} '{values}'")
    return found


def describe(engine: Engine) -> str:
    """The schema versions, as ``db version`` prints them."""
    found = state(engine)
    if found.empty:
        return "None"
    upstream = f"{found.upstream or 'None'} (upstream Placement's tables)"
    if found.own is None:
        return upstream
    return f"{found.own} (allotment), on {upstream}"


def upstream_revision(engine: Engine) -> str | None:
    """The revision of upstream's tables (``alembic_version``), what
    upstream's ``placement-manage db version`` prints."""
    with engine.connect() as conn:
        return _revision(conn, UPSTREAM_VERSIONS)


def stamp_upstream(engine: Engine, revision: str) -> None:
    """Write ``revision`` of upstream's history into ``alembic_version``
    without running anything, as upstream's ``db stamp`` does.

    :raises SchemaError: ``revision`` is not one of upstream's (nothing is
        written).
    """
    from alembic import command
    from alembic.script import ScriptDirectory

    cfg = alembic_config(engine, upstream=True)
    script = ScriptDirectory.from_config(cfg)
    try:
        found = script.get_revisions(revision)
    except Exception as exc:  # alembic's own lookup errors, of several classes
        found, cause = None, exc
    else:
        cause = None
    if not found and revision != "base":
        known = ", ".join(r.revision for r in reversed(list(script.walk_revisions())))
        raise SchemaError(
            f"'{revision}' is not a revision of Placement's schema that this allotment "
            "knows" + (f" ({cause})" if cause else "") + f"; it knows head, base and "
            f"{known}. Nothing was changed.")
    command.stamp(cfg, revision)
