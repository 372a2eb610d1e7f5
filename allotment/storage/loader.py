"""Load the provider world the API processes keep in memory.

:func:`load` reads providers with their inventories, traits and aggregates
-- every provider, or only the trees with some roots, which is how a process
catches up with the trees the change feed says changed (on PostgreSQL its
statements go to the server together, see ``direct.together``).  :func:`usage`
reads what is allocated, once, when a process loads everything; afterwards
usage moves by the feed's deltas.  The results are plain data
(:class:`LoadedProvider` tuples by provider id); the world model
(``allotment.world``) turns them into the engine's snapshot.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from allotment.storage import direct
from allotment.storage.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_classes,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
    traits,
)

# Positions of an inventory's fields in the tuples :func:`load` returns.
INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size",
                    "allocation_ratio")


class LoadedProvider(NamedTuple):
    """One provider as :func:`load` reads it (a tuple: a full load makes
    one per provider, and a tuple is the cheapest object to make)."""

    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str | None
    root_id: int | None
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    # class name -> the values of INVENTORY_FIELDS, in that order
    inventories: dict[str, tuple]
    traits: frozenset[str] | set[str]
    aggregates: frozenset[str] | set[str]

_RP = resource_providers
_PARENT = _RP.alias("parent")
_ROOT = _RP.alias("root")
_ROOTS = sa.bindparam("roots", expanding=True)
_IN_TREES = _RP.c.root_provider_id.in_(_ROOTS)

_PROVIDERS = (
    sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation, _PARENT.c.uuid,
              _ROOT.c.uuid, _RP.c.root_provider_id, _RP.c.created_at, _RP.c.updated_at)
    .select_from(_RP)
    .outerjoin(_PARENT, _PARENT.c.id == _RP.c.parent_provider_id)
    .outerjoin(_ROOT, _ROOT.c.id == _RP.c.root_provider_id))
_INVENTORIES = (
    sa.select(inventories.c.resource_provider_id, resource_classes.c.name,
              *(inventories.c[f] for f in INVENTORY_FIELDS))
    .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id))
_TRAITS = (
    sa.select(resource_provider_traits.c.resource_provider_id, traits.c.name)
    .join(traits, traits.c.id == resource_provider_traits.c.trait_id))
_AGGREGATES = (
    sa.select(resource_provider_aggregates.c.resource_provider_id, placement_aggregates.c.uuid)
    .join(placement_aggregates,
          placement_aggregates.c.id == resource_provider_aggregates.c.aggregate_id))


def _in_trees(query: sa.Select, provider_column: sa.Column,
              in_trees: sa.ColumnElement[bool]) -> sa.Select:
    return query.join(_RP, _RP.c.id == provider_column).where(in_trees)


def _tree_queries(in_trees: sa.ColumnElement[bool]) -> tuple[sa.Select, ...]:
    return (_PROVIDERS.where(in_trees),
            _in_trees(_INVENTORIES, inventories.c.resource_provider_id, in_trees),
            _in_trees(_TRAITS, resource_provider_traits.c.resource_provider_id, in_trees),
            _in_trees(_AGGREGATES, resource_provider_aggregates.c.resource_provider_id,
                      in_trees))


_TREE_QUERIES = _tree_queries(_IN_TREES)
# On PostgreSQL the roots go as one array: the statement's text is the same
# whatever their number (so it stays prepared), and the four statements can
# go to the server together (see direct.together).
_TREE_QUERIES_PG = _tree_queries(
    _RP.c.root_provider_id == sa.any_(sa.bindparam("roots", type_=sa.ARRAY(sa.Integer))))
# A few trees (one host's write, the usual case) are read one by one, by
# equality: PostgreSQL plans a prepared "= ANY($1)" anew on every run (its
# generic plan guesses ten elements, which never looks as cheap as a custom
# one), but settles on one plan for "= $1" after a few runs; planning these
# statements costs several times more than running them for one tree.
_TREE_QUERIES_PG_ONE = _tree_queries(_RP.c.root_provider_id == sa.bindparam("root"))
ONE_BY_ONE_MAX = 8


# Ids bound into one IN list at most: SQLite takes at most 32,766 bound
# parameters in a statement and PostgreSQL's protocol 65,535, and a process
# catching up after a bulk load may have that many trees or providers to read.
IN_LIST_MAX = 10_000


def _batches(ids: Iterable[int]) -> list[list[int]]:
    ordered = sorted(set(ids))
    return [ordered[i:i + IN_LIST_MAX] for i in range(0, len(ordered), IN_LIST_MAX)]


def tree_queries(conn: Connection, root_ids: Iterable[int]) -> list[tuple[sa.Select, dict]]:
    """The statements (with their parameters) that read the trees with
    these roots; :func:`assemble` makes their rows what :func:`load` returns."""
    if conn.dialect.name == "postgresql":
        roots = sorted(set(root_ids))
        if len(roots) <= ONE_BY_ONE_MAX:
            return [(query, {"root": root}) for root in roots for query in _TREE_QUERIES_PG_ONE]
        return [(query, {"roots": roots}) for query in _TREE_QUERIES_PG]
    return [(query, {"roots": roots}) for roots in _batches(root_ids) for query in _TREE_QUERIES]


def assemble(results: list) -> dict[int, LoadedProvider]:
    """The trees read by :func:`tree_queries`' statements, from their rows."""
    world: dict[int, LoadedProvider] = {}
    for k in range(0, len(results), len(_TREE_QUERIES)):
        # Trees do not share providers: the batches' worlds are disjoint.
        world.update(_assemble(*results[k:k + len(_TREE_QUERIES)]))
    return world


def load(conn: Connection, root_ids: Iterable[int] | None = None
         ) -> dict[int, LoadedProvider]:
    """Providers with their inventories, traits and aggregates, by id.

    Every provider, or with ``root_ids`` only the members of the trees with
    those roots *now* (a root that no longer exists contributes nothing).
    Rows are unpacked positionally:
    at 100,000 rows and more, attribute access on result rows is a
    measurable share of a full load.
    """
    if root_ids is None:
        return _assemble(*(conn.execute(query)
                           for query in (_PROVIDERS, _INVENTORIES, _TRAITS, _AGGREGATES)))
    return assemble(direct.together(conn, tree_queries(conn, root_ids)))


# The traits or aggregates of a provider that has none: one shared empty
# set, not one of its own.
_NONE: frozenset[str] = frozenset()


def _assemble(providers_rows, inventories_rows, traits_rows, aggregates_rows
              ) -> dict[int, LoadedProvider]:
    # A set is made only for a provider that has traits or aggregates (an
    # empty set is 216 bytes: two per provider were about 40 MB at 10,000
    # NUMA hosts, made between the strings the world keeps and freed after,
    # which left the pages they took resident but mostly empty).
    world: dict[int, LoadedProvider] = {
        pid: LoadedProvider(uuid, name, generation, parent_uuid, root_uuid, root_id,
                            created_at, updated_at, {}, _NONE, _NONE)
        for pid, uuid, name, generation, parent_uuid, root_uuid, root_id, created_at,
        updated_at in providers_rows}
    for pid, rc, *fields in inventories_rows:
        world[pid].inventories[rc] = tuple(fields)
    traits: dict[int, set[str]] = {}
    for pid, name in traits_rows:
        traits.setdefault(pid, set()).add(name)
    aggregates: dict[int, set[str]] = {}
    for pid, agg in aggregates_rows:
        aggregates.setdefault(pid, set()).add(agg)
    for pid, names in traits.items():
        world[pid] = world[pid]._replace(traits=names)
    for pid, aggs in aggregates.items():
        world[pid] = world[pid]._replace(aggregates=aggs)
    return world


_USAGE = (
    sa.select(allocations.c.resource_provider_id, allocations.c.resource_class_id,
              sa.func.sum(allocations.c.used))
    .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id))


_PROVIDERS_USAGE = _USAGE.where(
    allocations.c.resource_provider_id.in_(sa.bindparam("ids", expanding=True)))


def usage(conn: Connection, provider_ids: Iterable[int] | None = None
          ) -> list[tuple[int, int, int]]:
    """``(provider id, class id, used)`` for every allocated pair (of the
    providers ``provider_ids``, if given).

    One GROUP BY over allocations, answered from the (provider, class) index.
    """
    if provider_ids is None:
        return [(p, c, int(used)) for p, c, used in conn.execute(_USAGE)]
    return [(p, c, int(used)) for ids in _batches(provider_ids)
            for p, c, used in conn.execute(_PROVIDERS_USAGE, {"ids": ids})]


_CLASSES = sa.select(resource_classes.c.id, resource_classes.c.name)
# In the database's order of names: the world lists a provider's traits in
# that order, as the tables do (storage.provider_traits).
_TRAIT_IDS = sa.select(traits.c.name, traits.c.id).order_by(traits.c.name)


def class_names(conn: Connection) -> dict[int, str]:
    """Every resource class, by id."""
    return dict(conn.execute(_CLASSES).all())


def trait_ids(conn: Connection) -> dict[str, int]:
    """Every trait name with its id, in the database's order of names."""
    return dict(conn.execute(_TRAIT_IDS).all())


class LoadedNames(NamedTuple):
    """Every resource class by id and every trait's id by name."""

    class_by_id: dict[int, str]
    trait_ids: dict[str, int]


def names(conn: Connection) -> LoadedNames:
    return LoadedNames(class_names(conn), trait_ids(conn))
