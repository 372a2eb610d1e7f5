"""An immutable picture of every provider, built once and searched many times.

The allocation-candidate search never touches the database: storage loads
providers, inventories, traits and aggregates into :class:`ProviderRecord`
objects and :meth:`Snapshot.build` indexes them.  The topology (trees,
inventories, traits, aggregates, sharing) changes rarely while usage changes
with every allocation, so the two are kept apart:

* ``Snapshot.build(records)`` does the expensive work once per topology
  version.  Records may carry ``used`` amounts; a service that caches the
  topology builds from records with ``used=0``.
* ``snapshot.with_usage(used)`` returns a snapshot of the same topology with
  the given usage (``{provider uuid: {resource class: used}}``, missing means
  0, providers or classes without inventory are ignored).  It shares every
  static index with the original, costs O(1) (``used`` is consulted lazily,
  so it must not be modified afterwards) and never modifies the original.
  Searching it gives exactly what searching ``Snapshot.build`` of records
  with those ``used`` values gives.

What a renderer needs about a provider is cheap to read (``uuid`` is the
provider's UUID; unknown UUIDs raise ``KeyError`` except in :meth:`get`):

* :meth:`Snapshot.resources_of` -- ``{resource class: (capacity, used)}``,
  capacity being ``int((total - reserved) * allocation_ratio)``.
* :meth:`Snapshot.usage_of`, :meth:`Snapshot.traits_of`,
  :meth:`Snapshot.parent_uuid_of`, :meth:`Snapshot.root_uuid`.
* :meth:`Snapshot.get` -- a full :class:`ProviderRecord` (``root_uuid``
  always filled in) whose inventories carry this snapshot's usage; built
  afresh on every call, so prefer the accessors above in loops.

Providers are addressed internally by their position in ``Snapshot.uuids``
(sorted by UUID), which keeps the search's inner loops on small integers and
makes results independent of the order storage happened to load rows in.

Everything is held in flat tuples and dicts of numbers and strings, with
identical trait sets, aggregate sets and inventories stored once.  Such
containers drop out of the garbage collector's view, so a snapshot of a
hundred thousand providers does not turn every full collection (and thus the
latency of unrelated requests) into a walk over a million objects.  Indexes
that only some requests need (tree members, children, aggregate members,
providers per resource class) are built on first use and shared by every
overlay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import compress
from operator import attrgetter
from types import MappingProxyType

from allotment.engine import inventory_maps, sharing_anchors
from allotment.engine.forest import roots_and_depths
from allotment.engine.records import (
    CAPACITY,
    MAX_UNIT,
    MAX_UNIT_DEFAULT,
    MIN_UNIT,
    RATIO,
    RESERVED,
    SHARES_TRAIT,
    STEP_SIZE,
    TOTAL,
    Inventory,
    ProviderRecord,
    fits,
)

# The records and limits the snapshot is built from (re-exported: most
# callers know them as part of the snapshot).
__all__ = ["CAPACITY", "MAX_UNIT", "MAX_UNIT_DEFAULT", "MIN_UNIT", "RATIO", "RESERVED",
           "SHARES_TRAIT", "STEP_SIZE", "TOTAL", "Inventory", "ProviderRecord", "Snapshot"]

# Shared, never mutated: plain dicts keep the search's lookups fast.
_NO_TRAITS: frozenset[str] = frozenset()
_NO_USAGE: Mapping[str, int] = MappingProxyType({})
_by_uuid = attrgetter("uuid")


class _Lazy:
    """Indexes built on first use, shared by a snapshot and its overlays.

    Filling them from several threads at once is harmless: each value is a
    pure function of the static data, so a race only computes it twice.
    """

    __slots__ = ("agg_members", "by_rc", "children", "subtrees", "tree_rc", "trees")

    def __init__(self) -> None:
        self.agg_members: Mapping[str, tuple[int, ...]] | None = None
        self.by_rc: Mapping[str, tuple[int, ...]] | None = None
        self.children: tuple[tuple[int, ...], ...] | None = None
        self.subtrees: Mapping[int, tuple[int, ...]] | None = None
        self.trees: Mapping[int, tuple[int, ...]] | None = None
        self.tree_rc: dict[int, dict[str, tuple[int, ...]]] = {}


class Snapshot:
    """Providers plus the indexes the candidate search relies on.

    Build with :meth:`build`, derive per-request usage with
    :meth:`with_usage`; treat every attribute as read-only.

    Per provider position ``i``: ``uuids[i]``, ``parent[i]`` (-1 for
    roots), ``root[i]``, ``depth[i]``, ``traits[i]``, ``aggregates[i]``,
    ``is_sharing[i]`` and ``inventory[i]`` (``{rc: (capacity, min_unit, max_unit, step_size, total,
    reserved, allocation_ratio)}``, see the index constants above).  Usage
    lives apart in ``used`` (``{uuid: {rc: amount}}``; missing means 0 and
    entries for classes without inventory mean nothing).
    """

    __slots__ = (
        "_by_aggs",
        "_generations",
        "_lazy",
        "_names",
        "_order",
        "_parents",
        "_records",
        "aggregates",
        "anchors_of_sharing",
        "depth",
        "has_nested",
        "index",
        "inventory",
        "is_sharing",
        "parent",
        "root",
        "roots",
        "sharing",
        "sharing_by_anchor",
        "traits",
        "used",
        "uuids",
    )

    uuids: tuple[str, ...]
    names: tuple[str, ...]
    generations: tuple[int, ...]
    index: Mapping[str, int]
    parent: tuple[int, ...]            # -1 for roots
    root: tuple[int, ...]
    depth: tuple[int, ...]
    traits: tuple[frozenset[str], ...]
    aggregates: tuple[frozenset[str], ...]
    inventory: tuple[Mapping[str, tuple], ...]
    used: Mapping[str, Mapping[str, int]]
    is_sharing: tuple[bool, ...]
    roots: tuple[int, ...]
    sharing: tuple[int, ...]
    anchors_of_sharing: Mapping[int, frozenset[int]]
    sharing_by_anchor: Mapping[int, tuple[int, ...]]
    has_nested: bool

    # -- construction ------------------------------------------------------

    @classmethod
    def build(cls, records: Iterable[ProviderRecord]) -> Snapshot:
        # Fields are read with C-level maps, in the order the records were
        # given (usually the order they were allocated in, so memory is
        # walked sequentially), then permuted into UUID order: a Python-level
        # loop per provider would cost several times more.
        recs = records if isinstance(records, (list, tuple)) else list(records)
        n = len(recs)
        given = list(map(_by_uuid, recs))
        # position -> place in ``recs``; None when storage already loaded
        # the rows ordered by UUID.
        order: list[int] | None = sorted(range(n), key=given.__getitem__)
        if order == list(range(n)):
            order = None
        uuids = tuple(given) if order is None else tuple(map(given.__getitem__, order))
        index = dict(zip(uuids, range(n), strict=True))
        if len(index) != n:
            dup = next(u for k, u in enumerate(uuids) if k and uuids[k - 1] == u)
            raise ValueError(f"duplicate provider uuid {dup}")

        def field_of(name: str) -> list:
            return list(map(attrgetter(name), recs))

        def in_uuid_order(values: list) -> list:
            return values if order is None else list(map(values.__getitem__, order))

        lookup = dict(index)
        lookup[None] = -1
        parent_uuids = field_of("parent_uuid")
        found = list(map(lookup.get, parent_uuids))
        if None in found:
            k = found.index(None)
            raise ValueError(f"provider {given[k]} has unknown parent {parent_uuids[k]}")
        parent = in_uuid_order(found)
        parents = set(parent)
        parents.discard(-1)
        has_nested = bool(parents)
        if has_nested:
            root, depth = roots_and_depths(parent)
        else:
            root, depth = list(range(n)), [0] * n
        claims = in_uuid_order(field_of("root_uuid"))
        actual = list(map(uuids.__getitem__, root))
        if claims != actual:
            for i, claimed in enumerate(claims):
                if claimed is not None and claimed != actual[i]:
                    raise ValueError(
                        f"provider {uuids[i]} claims root {claimed} but "
                        f"its parent chain ends at {actual[i]}")

        # Store each distinct trait set, aggregate set, inventory and
        # inventory mapping once: most providers share a handful of them.
        # (frozenset() of a frozenset is the frozenset itself.)
        trait_sets: dict[frozenset[str], frozenset[str]] = {}
        traits = list(map(frozenset, field_of("traits")))
        traits = in_uuid_order(list(map(trait_sets.setdefault, traits, traits)))
        agg_sets: dict[frozenset[str], frozenset[str]] = {}
        aggregates = list(map(frozenset, field_of("aggregates")))
        aggregates = in_uuid_order(list(map(agg_sets.setdefault, aggregates, aggregates)))
        by_aggs: dict[frozenset[str], list[int]] = {}
        if any(agg_sets):
            for i, a in enumerate(aggregates):
                if a:
                    by_aggs.setdefault(a, []).append(i)

        # Inventories, one shared mapping per distinct set; usage apart.
        maps, used = inventory_maps.flatten(field_of("inventories"), given)
        inventory = in_uuid_order(maps)

        self = cls.__new__(cls)
        self.uuids = uuids
        # Only records need these: left in the given order.
        self._order = order
        self._names = field_of("name")
        self._generations = field_of("generation")
        self.index = MappingProxyType(index)
        self.parent = tuple(parent)
        self.root = tuple(root)
        self.depth = tuple(depth)
        self.traits = tuple(traits)
        self.aggregates = tuple(aggregates)
        self.inventory = tuple(inventory)
        self.used = used
        self.has_nested = has_nested
        self._parents = frozenset(parents)
        if has_nested:
            self.roots = tuple(compress(range(n), map((-1).__eq__, parent)))
        else:
            self.roots = tuple(range(n))
        self._by_aggs = {a: tuple(m) for a, m in by_aggs.items()}
        self._lazy = _Lazy()
        self._records = None

        sharing_sets = {t for t in trait_sets if SHARES_TRAIT in t}
        if sharing_sets:
            self.is_sharing = tuple(t in sharing_sets for t in traits)
            self.sharing = tuple(i for i in range(n) if self.is_sharing[i])
        else:
            self.is_sharing = (False,) * n
            self.sharing = ()
        # Which trees each sharing provider serves (aggregate members are
        # indexed only when there is a sharing provider to ask about).
        anchors_of_sharing, sharing_by_anchor = sharing_anchors.anchor_all(
            self.sharing, root, aggregates,
            self.agg_members if self.sharing else {})
        self.anchors_of_sharing = MappingProxyType(anchors_of_sharing)
        self.sharing_by_anchor = MappingProxyType(sharing_by_anchor)
        return self

    def with_usage(self, used: Mapping[str, Mapping[str, int]]) -> Snapshot:
        """This topology with ``used`` as its usage (see the module docstring).

        ``used`` replaces the usage of this snapshot entirely; the result
        shares every index with this snapshot, which is left unchanged.
        """
        other = Snapshot.__new__(Snapshot)
        for name in Snapshot.__slots__:
            setattr(other, name, getattr(self, name))
        other.used = used
        other._records = None
        return other

    # -- per-provider accessors ---------------------------------------------

    def __len__(self) -> int:
        return len(self.uuids)

    def get(self, uuid: str) -> ProviderRecord | None:
        """The provider as a record, with this snapshot's usage; None if unknown."""
        i = self.index.get(uuid)
        return None if i is None else self.record(i)

    def record(self, i: int) -> ProviderRecord:
        """The provider at position ``i`` as a record, with this snapshot's usage."""
        k = i if self._order is None else self._order[i]
        usage = self.used.get(self.uuids[i], _NO_USAGE)
        inventories = {
            rc: Inventory(total=lim[TOTAL], reserved=lim[RESERVED],
                          min_unit=lim[MIN_UNIT], max_unit=lim[MAX_UNIT],
                          step_size=lim[STEP_SIZE], allocation_ratio=lim[RATIO],
                          used=usage.get(rc, 0))
            for rc, lim in self.inventory[i].items()
        }
        p = self.parent[i]
        return ProviderRecord(
            uuid=self.uuids[i], name=self._names[k], generation=self._generations[k],
            parent_uuid=None if p == -1 else self.uuids[p],
            root_uuid=self.uuids[self.root[i]], inventories=inventories,
            traits=self.traits[i], aggregates=self.aggregates[i])

    @property
    def providers(self) -> tuple[ProviderRecord, ...]:
        """Every provider as a record, in position order.

        Materialised on first use (and then kept): prefer :meth:`get` or the
        narrower accessors on big snapshots.
        """
        if self._records is None:
            self._records = tuple(self.record(i) for i in range(len(self.uuids)))
        return self._records

    def name_of(self, i: int) -> str:
        """The name of the provider at position ``i``."""
        return self._names[i if self._order is None else self._order[i]]

    def generation_of(self, i: int) -> int:
        """The generation of the provider at position ``i``."""
        return self._generations[i if self._order is None else self._order[i]]

    def generations_total(self) -> int:
        """The sum of every provider's generation (a position held by none
        counts 0): it moves on with every write the world has taken."""
        return sum(self._generations)

    def usage_of(self, uuid: str, rc: str) -> int:
        if rc not in self.inventory[self.index[uuid]]:
            return 0
        return self.used.get(uuid, _NO_USAGE).get(rc, 0)

    def has_room(self, i: int, wanted: Iterable[tuple[str, int]]) -> bool:
        """Whether provider ``i`` has inventory of every class ``wanted``
        (``(class, amount)`` pairs) that a single request of the amount fits."""
        inventory = self.inventory[i]
        usage = self.used.get(self.uuids[i], _NO_USAGE)
        for rc, amount in wanted:
            lim = inventory.get(rc)
            if lim is None or not fits(lim, usage.get(rc, 0), amount):
                return False
        return True

    def resources_of(self, uuid: str) -> dict[str, tuple[int, int]]:
        """``{resource class: (capacity, used)}`` of one provider."""
        i = self.index[uuid]
        usage = self.used.get(uuid, _NO_USAGE)
        return {rc: (lim[CAPACITY], usage.get(rc, 0))
                for rc, lim in self.inventory[i].items()}

    def traits_of(self, uuid: str) -> frozenset[str]:
        return self.traits[self.index[uuid]]

    def parent_uuid_of(self, uuid: str) -> str | None:
        p = self.parent[self.index[uuid]]
        return None if p == -1 else self.uuids[p]

    def root_uuid(self, uuid: str) -> str:
        return self.uuids[self.root[self.index[uuid]]]

    def tree_uuids(self, uuid: str) -> tuple[str, ...]:
        """UUIDs of every provider in the tree containing ``uuid``."""
        r = self.root[self.index[uuid]]
        return tuple(self.uuids[i] for i in self.tree_members(r))

    # -- structural indexes ------------------------------------------------

    def tree_members(self, r: int) -> tuple[int, ...]:
        """Positions of every provider of the tree rooted at ``r``, sorted."""
        return self.trees_of_many().get(r) or (r,)

    def members_with(self, r: int, rc: str) -> tuple[int, ...]:
        """Providers of the tree rooted at ``r`` with inventory of ``rc``."""
        members = self.trees_of_many().get(r)
        if members is None:
            return (r,) if rc in self.inventory[r] else ()
        cache = self._lazy.tree_rc
        per_rc = cache.get(r)
        if per_rc is None:
            grouped: dict[str, list[int]] = {}
            inventory = self.inventory
            for p in members:
                for c in inventory[p]:
                    grouped.setdefault(c, []).append(p)
            per_rc = cache[r] = {c: tuple(m) for c, m in grouped.items()}
        return per_rc.get(rc, ())

    def trees_of_many(self) -> Mapping[int, tuple[int, ...]]:
        """Members of every tree with more than one provider (built on first use)."""
        lazy = self._lazy
        if lazy.subtrees is None:
            subtrees: dict[int, tuple[int, ...]] = {}
            if self.has_nested:
                root = self.root
                # Appending in position order keeps each tree's members sorted.
                grouped: dict[int, list[int]] = {root[p]: [] for p in self._parents}
                for i, r in enumerate(root):
                    members = grouped.get(r)
                    if members is not None:
                        members.append(i)
                subtrees = {r: tuple(m) for r, m in grouped.items()}
            lazy.subtrees = subtrees
        return lazy.subtrees

    def position_revisions(self) -> list[int] | None:
        """Per position, a number that changes whenever the provider does;
        None where the snapshot never changes (see engine.live)."""
        return None

    def kept_answers(self, kind: object) -> None:
        """Where a snapshot that changes keeps per-tree search results (see
        engine.kept); this one never changes and keeps none."""
        return None

    def is_lonely(self, r: int) -> bool:
        """Whether root ``r`` is a tree of one provider that no sharing
        provider serves."""
        return r not in self.trees_of_many() and r not in self.sharing_by_anchor

    def is_leaf(self, i: int) -> bool:
        return i not in self._parents

    @property
    def trees(self) -> Mapping[int, tuple[int, ...]]:
        """Root -> members, for every tree (built on first use)."""
        lazy = self._lazy
        if lazy.trees is None:
            lazy.trees = MappingProxyType(
                {r: self.tree_members(r) for r in self.roots})
        return lazy.trees

    @property
    def children(self) -> tuple[tuple[int, ...], ...]:
        lazy = self._lazy
        if lazy.children is None:
            kids: list[list[int]] = [[] for _ in self.uuids]
            for i, p in enumerate(self.parent):
                if p != -1:
                    kids[p].append(i)
            lazy.children = tuple(tuple(k) for k in kids)
        return lazy.children

    @property
    def by_rc(self) -> Mapping[str, tuple[int, ...]]:
        """Resource class -> positions of the providers with inventory of it."""
        lazy = self._lazy
        if lazy.by_rc is None:
            grouped: dict[str, list[int]] = {}
            for i, inventory in enumerate(self.inventory):
                for rc in inventory:
                    grouped.setdefault(rc, []).append(i)
            lazy.by_rc = MappingProxyType({rc: tuple(m) for rc, m in grouped.items()})
        return lazy.by_rc

    @property
    def agg_members(self) -> Mapping[str, tuple[int, ...]]:
        """Aggregate UUID -> positions of its member providers, sorted."""
        lazy = self._lazy
        if lazy.agg_members is None:
            grouped: dict[str, list[int]] = {}
            for aggs, members in self._by_aggs.items():
                for a in aggs:
                    grouped.setdefault(a, []).extend(members)
            lazy.agg_members = MappingProxyType(
                {a: tuple(sorted(m)) for a, m in grouped.items()})
        return lazy.agg_members

    def symmetry_key(self, i: int) -> object:
        """Equal for interchangeable providers, None when not worth comparing.

        Two non-root leaves under the same parent with identical inventories,
        usage, traits and aggregates can be swapped without changing whether
        any request can be satisfied; the search uses this to avoid
        re-exploring dead ends once per such twin.
        """
        p = self.parent[i]
        if p == -1 or i in self._parents:
            return None
        inventory = self.inventory[i]
        usage = self.used.get(self.uuids[i])
        if usage:
            usage = tuple(sorted((rc, amount) for rc, amount in usage.items()
                                 if amount and rc in inventory))
        return (p, tuple(sorted(inventory.items())), self.traits[i],
                self.aggregates[i], usage or ())

    def is_ancestor_or_self(self, ancestor: int, node: int) -> bool:
        if self.root[ancestor] != self.root[node]:
            return False
        while self.depth[node] > self.depth[ancestor]:
            node = self.parent[node]
        return node == ancestor
