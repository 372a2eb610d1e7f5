"""A snapshot that changes in place, one tree at a time.

:class:`Snapshot` is built once from every provider.  A service that keeps
the provider world in memory cannot afford that on every change (a full
build walks every provider of the cloud), so :class:`LiveSnapshot` offers
the same read interface -- the search cannot tell the two apart -- plus two
ways to change it:

* :meth:`LiveSnapshot.replace_trees` swaps whole trees: everything under the
  given roots is dropped and the given records (complete trees) take their
  place.  The cost follows the size of the trees and of the aggregates they
  are in, not the size of the world.
* :meth:`LiveSnapshot.add_usage` moves usage by deltas.

Positions are slots: a provider keeps its slot for as long as it exists, a
new provider takes a free slot or a new one, and a deleted provider leaves
a hole (no UUID, no inventory, in no tree) that a later provider may reuse.
Positions are therefore not in UUID order; everything whose order shows in
results (roots, tree members, the sharing providers of an anchor) is kept
sorted by UUID explicitly, so a live snapshot answers every request exactly
as a snapshot built from scratch over the same records does.  It is not
safe to read while it is being changed: callers serialise changes against
searches (see ``allotment.world``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Iterable, Mapping

from allotment.engine import kept, revisions, sharing_anchors
from allotment.engine.generations import Generations
from allotment.engine.index_upkeep import IndexUpkeep
from allotment.engine.inventory_maps import InventoryMaps, limits_of
from allotment.engine.snapshot import SHARES_TRAIT, ProviderRecord, Snapshot

_NO_AGGS: frozenset[str] = frozenset()
_NO_USAGE: dict[str, int] = {}
_REVISIONS = revisions.Revisions()


class LiveSnapshot(Snapshot, IndexUpkeep):
    """A :class:`Snapshot` that :meth:`replace_trees` and :meth:`add_usage` change."""

    __slots__ = ("_free", "_interned", "_kept", "_limits", "_log", "_maps", "_revs",
                 "_root_keys", "_root_traits")

    # -- construction ------------------------------------------------------

    @classmethod
    def build(cls, records: Iterable[ProviderRecord]) -> LiveSnapshot:
        base = Snapshot.build(records)
        self = cls.__new__(cls)
        n = len(base.uuids)
        self.uuids = list(base.uuids)
        self.index = dict(base.index)
        self.parent = list(base.parent)
        # Each position as one int object, the index's: the base's other
        # indexes made equal ints of their own, 32 bytes each (about 200,000
        # of them at 10,000 NUMA hosts), which would live as long as this.
        pos = list(range(n))
        for i in self.index.values():
            pos[i] = i
        at = pos.__getitem__
        self.root = list(map(at, base.root))
        self.depth = list(base.depth)
        self.traits = list(base.traits)
        self.aggregates = list(base.aggregates)
        self.inventory = list(base.inventory)
        self.is_sharing = list(base.is_sharing)
        # Records keep names and generations in the order they were given.
        order = base._order
        self._names = (list(base._names) if order is None
                       else [base._names[k] for k in order])
        self._generations = Generations(base._generations if order is None
                                        else [base._generations[k] for k in order])
        self._order = None
        self.used = {u: dict(per_rc) for u, per_rc in base.used.items()}
        self._parents = set(base._parents)
        self.has_nested = bool(self._parents)
        self.roots = list(map(at, base.roots))
        self._root_keys = [self.uuids[r] for r in self.roots]
        self.sharing = list(base.sharing)
        self.anchors_of_sharing = dict(base.anchors_of_sharing)
        self.sharing_by_anchor = dict(base.sharing_by_anchor)
        self._by_aggs = {}
        self._lazy = base._lazy
        self._lazy.subtrees = {at(r): tuple(map(at, m))
                               for r, m in base.trees_of_many().items()}
        self._lazy.agg_members = {a: set(map(at, m)) for a, m in base.agg_members.items()}
        # Lists in position order rather than sets: 1.0 MB against 8.9 MB
        # at 10,000 NUMA hosts.
        self._lazy.by_rc = {rc: list(map(at, m)) for rc, m in base.by_rc.items()}
        self._root_traits = {}
        for r in self.roots:
            self._count_root(r, 1)
        self._records = None
        self._free = []
        # Per slot: changes whenever anything about the provider does, so
        # callers can keep what they derive from it until it changes.
        first = _REVISIONS.take(n)
        self._revs = list(range(first, first + n))
        self._kept = kept.Store(self.__len__, self.root_count)
        self._log = revisions.TouchLog(self.__len__)
        # Identical trait sets, aggregate sets, limits and inventory maps are
        # stored once, as Snapshot.build does.
        self._interned = {}
        for value in (*self.traits, *self.aggregates):
            self._interned.setdefault(value, value)
        self._limits = {}
        self._maps = InventoryMaps()
        for inventory in self.inventory:
            key = tuple(inventory.items())
            for _, lim in key:
                self._limits.setdefault(lim, lim)
            self._maps.setdefault(key, inventory)
        assert n == len(self.uuids)
        return self

    @classmethod
    def empty(cls) -> LiveSnapshot:
        return cls.build(())

    # -- reading -----------------------------------------------------------

    @property
    def agg_members(self) -> Mapping[str, set[int]]:
        """Aggregate UUID -> positions of its members (unordered)."""
        return self._lazy.agg_members

    @property
    def by_rc(self) -> Mapping[str, list[int]]:
        """Resource class -> positions with inventory of it, in position order."""
        return self._lazy.by_rc

    def revision(self, uuid: str) -> int:
        """A number that changes whenever anything about the provider does
        (inventories, usage, traits, aggregates, name, generation, place in
        its tree)."""
        return self._revs[self.index[uuid]]

    def position_revisions(self) -> list[int]:
        """:meth:`revision` of every position (read only)."""
        return self._revs

    def kept_answers(self, kind: Hashable) -> kept.Kind:
        """Where the search keeps its answers to requests of ``kind`` per
        tree (see engine.kept)."""
        return self._kept.kind(kind)

    def kept_hits(self) -> int:
        """Trees answered from kept answers so far."""
        return self._kept.hits

    def touch_mark(self) -> int:
        """Where the log of touched positions stands now (see touched_since)."""
        return self._log.mark()

    def touched_since(self, mark: int) -> list[int] | None:
        """Positions whose provider changed, appeared or went since ``mark``
        (a dropped one as itself), or None when that is no longer known."""
        return self._log.since(mark)

    def _touch(self, i: int) -> None:
        self._revs[i] = _REVISIONS.take()
        self._log.add(i)

    def root_trait_sets(self) -> Iterable[frozenset[str]]:
        """The distinct trait sets of roots (few, however many roots there are)."""
        return self._root_traits.keys()

    def __len__(self) -> int:
        return len(self.index)

    def root_count(self) -> int:
        return len(self.roots)

    def live_positions(self) -> list[int]:
        """Every position holding a provider, in UUID order."""
        return sorted(self.index.values(), key=self.uuids.__getitem__)

    @property
    def providers(self) -> tuple[ProviderRecord, ...]:
        """Every provider as a record, in UUID order (holes skipped)."""
        if self._records is None:
            self._records = tuple(self.record(i) for i in self.live_positions())
        return self._records

    def with_usage(self, changed: Mapping[str, dict[str, int]]) -> LiveSnapshot:
        """This world with the usage of the providers in ``changed`` replaced,
        as a new snapshot: the topology is shared, this one is left unchanged.
        The providers concerned get new revisions, so nothing kept of them as
        they are is taken for them as they would be; the copy keeps its
        search answers apart (it lives for one request: engine.whatif)."""
        other = LiveSnapshot.__new__(LiveSnapshot)
        for cls in (Snapshot, LiveSnapshot):
            for name in cls.__slots__:
                setattr(other, name, getattr(self, name))
        other.used = {**self.used, **changed}
        revs = other._revs = list(self._revs)
        other._kept = kept.Store(other.__len__, other.root_count)
        other._records = None
        for uuid in changed:
            i = self.index.get(uuid)
            if i is not None:
                revs[i] = _REVISIONS.take()
        return other

    # -- changing ----------------------------------------------------------

    def add_usage(self, deltas: Iterable[tuple[str, str, int]]) -> None:
        """Add ``amount`` to the usage of ``(provider uuid, class)`` for each delta.

        Usage of providers not (or no longer) in the snapshot is kept as
        well: it applies if the provider appears later, as usage given to
        :meth:`Snapshot.with_usage` would.
        """
        used, index = self.used, self.index
        # A provider's usage map may be shared with providers of equal usage
        # (engine.usage_maps): it is changed on a copy of its own, made once
        # per call.
        copies: dict[str, dict[str, int]] = {}
        for uuid, rc, amount in deltas:
            if not amount:
                continue
            i = index.get(uuid)
            if i is not None:
                self._touch(i)
            per_rc = copies.get(uuid)
            if per_rc is None:
                per_rc = copies[uuid] = dict(used.get(uuid, _NO_USAGE))
            total = per_rc.get(rc, 0) + amount
            if total:
                per_rc[rc] = total
            else:
                del per_rc[rc]
        for uuid, per_rc in copies.items():
            if per_rc:
                used[uuid] = per_rc
            else:
                used.pop(uuid, None)

    def set_usage(self, uuid: str, per_rc: Mapping[str, int]) -> None:
        """Replace the whole usage of one provider."""
        i = self.index.get(uuid)
        if i is not None:
            self._touch(i)
        if per_rc:
            self.used[uuid] = {rc: n for rc, n in per_rc.items() if n}
        else:
            self.used.pop(uuid, None)

    def generations_total(self) -> int:
        return self._generations.total  # kept as generations are set

    def set_generation(self, uuid: str, generation: int) -> None:
        """Raise a provider's generation to ``generation`` (never lowers it).

        Generations only grow, so changes arriving out of order still leave
        the newest one.
        """
        i = self.index.get(uuid)
        if i is not None and generation > self._generations[i]:
            self._generations[i] = generation
            self._touch(i)
            self._records = None

    def replace_trees(self, roots: Iterable[str],
                      records: Iterable[ProviderRecord]) -> None:
        """Replace the trees rooted at ``roots`` by ``records``.

        ``roots`` are UUIDs of the current roots of the trees to drop
        (unknown ones are ignored); ``records`` are complete trees (every
        provider's parent is among them), possibly with new roots, moved
        providers or none at all.  A record whose provider currently lives
        in a tree not named in ``roots`` is moved out of it, and that tree
        keeps its other providers.  Usage is left as it is except for
        providers that disappear, whose usage is forgotten.
        """
        records = list(records)
        incoming = {rec.uuid for rec in records}
        old_roots, old_members, replaced = self._trees_touched(roots, incoming)
        # Aggregates whose members or whose members' roots may change:
        # the sharing providers in them must be re-anchored.
        touched_aggs: set[str] = set()
        sharing_before = {i for i in old_members if self.is_sharing[i]}
        for i in old_members:
            touched_aggs |= self.aggregates[i]
        self._detach(old_roots, old_members, replaced, incoming)
        placed = self._place(records)
        for i in placed:
            touched_aggs |= self.aggregates[i]
        # Trees that lost a moved provider but were not replaced keep the rest.
        placed_set = set(placed)
        nodes = [i for i in old_members
                 if self.uuids[i] is not None and i not in placed_set] + placed
        self._regraft(nodes, records, placed)
        self._index_trees(nodes)
        sharing_anchors.reanchor(
            self, touched_aggs, sharing_before | {i for i in placed if self.is_sharing[i]})
        self._lazy.children = None
        self._lazy.trees = None
        self._records = None

    def _trees_touched(self, roots: Iterable[str], incoming: set[str]
                       ) -> tuple[set[int], list[int], set[int]]:
        """The roots of the trees named or holding an incoming provider,
        every member of those trees, and the members of the named ones."""
        index = self.index
        named: set[int] = set()
        for uuid in roots:
            i = index.get(uuid)
            if i is not None:
                named.add(self.root[i])
        old_roots = set(named)
        for uuid in incoming:
            i = index.get(uuid)
            if i is not None:
                old_roots.add(self.root[i])
        old_members: list[int] = []
        replaced: set[int] = set()
        for r in old_roots:
            members = self.tree_members(r)
            old_members.extend(members)
            if r in named:
                replaced.update(members)
        return old_roots, old_members, replaced

    def _detach(self, old_roots: set[int], old_members: list[int], replaced: set[int],
                incoming: set[str]) -> None:
        """Drop what disappears, detach everything else from the old trees."""
        uuids = self.uuids
        for r in old_roots:
            k = bisect_left(self._root_keys, uuids[r])
            if k < len(self.roots) and self.roots[k] == r:
                del self.roots[k]
                del self._root_keys[k]
                self._count_root(r, -1)
            self._lazy.subtrees.pop(r, None)
            self._lazy.tree_rc.pop(r, None)
        for i in old_members:
            self._parents.discard(i)
            if i in replaced and uuids[i] not in incoming:
                self._set_aggregates(i, _NO_AGGS)
                self._drop(i)

    def _place(self, records: list[ProviderRecord]) -> list[int]:
        """Fill the records into their providers' positions (new ones take
        one) and link each to its parent; returns the positions."""
        placed: list[int] = []
        for rec in records:
            i = self.index.get(rec.uuid)
            if i is None:
                i = self._allocate(rec.uuid)
            placed.append(i)
            self._fill(i, rec)
        lookup = {rec.uuid: i for rec, i in zip(records, placed, strict=True)}
        for rec, i in zip(records, placed, strict=True):
            if rec.parent_uuid is None:
                self.parent[i] = -1
            else:
                p = lookup.get(rec.parent_uuid)
                if p is None:
                    raise ValueError(
                        f"provider {rec.uuid} has unknown parent {rec.parent_uuid}")
                self.parent[i] = p
        return placed

    def _regraft(self, nodes: list[int], records: list[ProviderRecord],
                 placed: list[int]) -> None:
        """Roots and depths of ``nodes`` (whole trees) from their parents;
        a record's root, when it names one, must be the one found."""
        uuids = self.uuids
        for i in nodes:
            self._touch(i)
            if self.parent[i] != -1:
                self._parents.add(self.parent[i])
        self._place_in_trees(nodes)
        for rec, i in zip(records, placed, strict=True):
            if rec.root_uuid is not None and rec.root_uuid != uuids[self.root[i]]:
                raise ValueError(
                    f"provider {rec.uuid} claims root {rec.root_uuid} but its "
                    f"parent chain ends at {uuids[self.root[i]]}")
        self.has_nested = bool(self._parents)

    def _index_trees(self, nodes: list[int]) -> None:
        """The member lists of the trees ``nodes`` make, and their roots
        among the roots (both in UUID order)."""
        uuids = self.uuids
        by_root: dict[int, list[int]] = {}
        for i in nodes:
            by_root.setdefault(self.root[i], []).append(i)
        for r, members in by_root.items():
            if len(members) > 1:
                members.sort(key=uuids.__getitem__)
                self._lazy.subtrees[r] = tuple(members)
            else:
                self._lazy.subtrees.pop(r, None)
            self._lazy.tree_rc.pop(r, None)
            k = bisect_left(self._root_keys, uuids[r])
            if k == len(self.roots) or self.roots[k] != r:
                self.roots.insert(k, r)
                self._root_keys.insert(k, uuids[r])
                self._count_root(r, 1)

    # -- internals ----------------------------------------------------------

    def _allocate(self, uuid: str) -> int:
        if self._free:
            i = self._free.pop()
        else:
            i = len(self.uuids)
            for column in (self.uuids, self.parent, self.root, self.depth, self.traits,
                           self.aggregates, self.inventory, self.is_sharing,
                           self._names, self._generations, self._revs):
                column.append(None)
            self._blank(i)
        self.uuids[i] = uuid
        self.index[uuid] = i
        return i

    def _blank(self, i: int) -> None:
        self.uuids[i] = None
        self.parent[i] = -1
        self.root[i] = i
        self.depth[i] = 0
        self.traits[i] = frozenset()
        self.aggregates[i] = _NO_AGGS
        self._set_inventory(i, self._maps[()])
        self.is_sharing[i] = False
        self._names[i] = ""
        self._generations[i] = 0

    def _drop(self, i: int) -> None:
        self._log.add(i)
        uuid = self.uuids[i]
        del self.index[uuid]
        self.used.pop(uuid, None)
        self._blank(i)
        self._free.append(i)

    def _intern(self, value: frozenset[str]) -> frozenset[str]:
        return self._interned.setdefault(value, value)

    def _fill(self, i: int, rec: ProviderRecord) -> None:
        traits = self._intern(frozenset(rec.traits))
        self.traits[i] = traits
        self.is_sharing[i] = SHARES_TRAIT in traits
        self._set_aggregates(i, self._intern(frozenset(rec.aggregates)))
        key = tuple((rc, self._limits.setdefault(lim, lim))
                    for rc, lim in ((rc, limits_of(inv))
                                    for rc, inv in rec.inventories.items()))
        self._set_inventory(i, self._maps[key])
        self._names[i] = rec.name
        self._generations[i] = rec.generation
