"""The in-memory world: providers, usage and names, changed by feed entries.

Pure data and pure functions: the SQL that reads what to apply lives in
``allotment.storage``; ``allotment.world.sync`` decides when to apply it.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from allotment.engine import contents, usage_maps
from allotment.engine.codec import Codec
from allotment.engine.live import LiveSnapshot
from allotment.engine.snapshot import Inventory, ProviderRecord
from allotment.storage.cursor import Changes
from allotment.storage.loader import LoadedProvider
from allotment.world import compaction
from allotment.world.cache import Cache
from allotment.world.ids import UuidsById
from allotment.world.stamps import Stamp, Stamps

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Names:
    """Resource classes and traits as the world knows them."""

    class_by_id: Mapping[int, str] = field(default_factory=dict)
    # Trait name -> id: summaries list traits in id order as Placement does
    # (standard traits first, then custom ones in creation order).  Its own
    # order is the database's order of the names (storage.loader.trait_ids).
    trait_rank: Mapping[str, int] = field(default_factory=dict)

    classes: frozenset[str] = field(init=False, repr=False, compare=False)
    # Trait name -> its place among the names as the database orders them
    # (its collation, which Python's sort need not agree with): a
    # provider's traits are listed in that order.
    trait_order: Mapping[str, int] = field(init=False, repr=False, compare=False)
    # Class name -> id: a provider's inventories are listed in id order.
    class_id: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "class_id",
                           {name: cid for cid, name in self.class_by_id.items()})
        object.__setattr__(self, "classes", frozenset(self.class_id))
        object.__setattr__(self, "trait_order",
                           {name: i for i, name in enumerate(self.trait_rank)})

    def renames_classes_of(self, other: Names) -> bool:
        """Whether some class id kept in both is named differently here."""
        return any(other.class_by_id.get(cid, name) != name
                   for cid, name in self.class_by_id.items())


# Interned inventory objects: most providers of a cloud share a few.
_INVENTORIES: dict[tuple, Inventory] = {}


def _inventory(fields: tuple) -> Inventory:
    inv = _INVENTORIES.get(fields)
    if inv is None:
        if len(_INVENTORIES) > 100_000:
            _INVENTORIES.clear()
        inv = _INVENTORIES[fields] = Inventory(*fields)
    return inv


def records_of(loaded: Mapping[int, LoadedProvider]) -> list[ProviderRecord]:
    """Engine records from what ``storage.loader.load`` returns (no usage).

    Providers with the same inventories share one mapping of them (records
    are never changed).  The engine keeps mappings of its own, so these
    live only while it is built; one per provider (about 20 MB at 10,000
    NUMA hosts) took pages that stayed resident, mostly empty, afterwards
    (a process loading that world ends about 2 MB smaller without them).
    """
    maps: dict[tuple, Mapping[str, Inventory]] = {}

    def inventories_of(p: LoadedProvider) -> Mapping[str, Inventory]:
        key = tuple(p.inventories.items())
        found = maps.get(key)
        if found is None:
            found = maps[key] = {rc: _inventory(fields) for rc, fields in key}
        return found

    return [ProviderRecord(
        uuid=p.uuid, name=p.name, generation=p.generation,
        parent_uuid=p.parent_uuid, root_uuid=p.root_uuid,
        inventories=inventories_of(p),
        traits=frozenset(p.traits), aggregates=frozenset(p.aggregates))
        for p in loaded.values()]


CYCLE = "its parent links form a cycle"
NO_ROOT = "its parent links lead to a provider that is missing or damaged"


def split_damaged(loaded: Mapping[int, LoadedProvider]
                  ) -> tuple[dict[int, LoadedProvider], dict[str, str]]:
    """``loaded`` without the providers whose parent links do not reach a
    root inside it, and those providers (UUID -> why).

    Whole trees are read at once, so every parent is among them: a provider
    whose chain of parents loops, or ends at one that is not there, was left
    by writes the database should have refused (two re-parentings committed
    at once through two cluster nodes, a foreign writer).  The engine cannot
    place such providers in a tree; the world keeps them out, and says so,
    instead of failing as a whole.
    """
    pid_of = {p.uuid: pid for pid, p in loaded.items()}
    verdict: dict[str, str | None] = {}  # None: reaches a root
    for start in pid_of:
        chain: list[str] = []
        node: str | None = start
        why: str | None = None
        while node is not None and node not in verdict:
            if node in chain:
                # The loop itself; those that lead into it only hang off it.
                loop = chain.index(node)
                verdict.update((member, CYCLE) for member in chain[loop:])
                del chain[loop:]
                why = NO_ROOT
                break
            if node not in pid_of:
                why = NO_ROOT
                break
            chain.append(node)
            node = loaded[pid_of[node]].parent_uuid
        else:
            # Reached a root, or a provider already judged.
            why = None if node is None or verdict[node] is None else NO_ROOT
        for member in chain:
            verdict[member] = why
    damaged = {uuid: why for uuid, why in verdict.items() if why is not None}
    if not damaged:
        return dict(loaded), {}
    LOG.error("Providers left out of the world because their parent links are broken "
              "in the database (repair them, then restart): %s", damaged)
    return {pid: p for pid, p in loaded.items() if p.uuid not in damaged}, damaged


class World:
    """Every provider with its usage, plus the names of classes and traits."""

    def __init__(self, loaded: Mapping[int, LoadedProvider], usage: Iterable[tuple[int, int, int]],
                 names: Names, codec: Codec | None = None) -> None:
        self.names = names
        # What answers are kept encoded with (see engine.codec); None: not at all.
        self.codec = codec
        # Changes whenever ``names`` does (trait order in summaries follows it).
        self.names_version = 0
        # What services and renderers make of providers (see world.cache).
        self.cache = Cache(lambda: len(self.snapshot))
        self.uuid_of_id = UuidsById()
        # Provider names are unique: name -> UUID.
        self.by_name: dict[str, str] = {}
        # UUID -> position in creation order, rebuilt on demand after trees
        # change (listings are in creation order).
        self._creation_rank: dict[str, int] | None = None
        # Providers kept out because their parent links are broken (see
        # split_damaged): UUID -> why.  Requests about them are refused.
        loaded, self.damaged = split_damaged(loaded)
        # The snapshot first, and the engine records it is built from gone
        # before the per-provider maps below are made: what the world keeps
        # then takes the pages the records held, rather than pages of its
        # own between them (a page with one live object in it stays
        # resident, and is mapped by every worker).
        self.snapshot = LiveSnapshot.build(records_of(loaded))
        self.stamps = Stamps(self.snapshot.index)
        self._remember(loaded)
        self.snapshot.add_usage(self._usage_deltas(usage))
        usage_maps.share_equal(self.snapshot.used)

    # What :meth:`compact` makes again besides the snapshot.
    _KEPT = ("stamps", "uuid_of_id", "by_name", "damaged")

    def compact(self) -> None:
        """Make what the world keeps again, next to each other, once what
        reading it left behind is gone (see world.compaction): for a
        process that forks others, which map all of its pages."""
        snap = self.snapshot
        parts = [[getattr(self, name) for name in self._KEPT], contents.take(snap)]
        for name in self._KEPT:
            setattr(self, name, None)
        self._creation_rank = None
        try:
            mine, snapshots = compaction.remade(parts)
        except Exception:
            if not parts:
                raise  # the originals are gone: the caller reads the world again
            # Not picklable (nothing the world keeps today): kept as it was.
            LOG.warning("The world could not be compacted", exc_info=True)
            mine, snapshots = parts
        for name, value in zip(self._KEPT, mine, strict=True):
            setattr(self, name, value)
        contents.put(snap, snapshots)

    def _remember(self, loaded: Mapping[int, LoadedProvider]) -> None:
        # A root's id as the int object its own row gave (the same value
        # read as root_provider_id is another object per provider).
        ids = {pid: pid for pid in loaded}
        # Each time as one object: rows give a datetime each, and providers
        # made together (a host with its NUMA nodes) often share their times.
        times: dict = {None: None}
        at = times.setdefault
        for pid, p in loaded.items():
            self.uuid_of_id[pid] = p.uuid
            self.by_name[p.name] = p.uuid
            self.stamps[p.uuid] = Stamp(pid, ids.get(p.root_id, p.root_id),
                                        at(p.created_at, p.created_at),
                                        at(p.updated_at, p.updated_at))

    def _usage_deltas(self, deltas: Iterable[tuple[int, int, int]]
                      ) -> Iterable[tuple[str, str, int]]:
        uuid_of_id, class_by_id = self.uuid_of_id, self.names.class_by_id
        for pid, cid, amount in deltas:
            uuid = uuid_of_id.get(pid)
            rc = class_by_id.get(cid)
            # A provider the world does not know has been deleted since
            # (deletion needs it to hold nothing, so nothing is lost).
            if uuid is not None and rc is not None:
                yield uuid, rc, amount

    def set_names(self, names: Names) -> None:
        if names != self.names:
            self.names = names
            self.names_version += 1

    def memo(self, kind: Hashable) -> dict:
        """The section of the world's cache for ``kind`` (see world.cache)."""
        return self.cache.section(kind)

    def creation_rank(self) -> dict[str, int]:
        """UUID -> rank of the provider in creation (id) order."""
        if self._creation_rank is None:
            ordered = sorted(self.stamps, key=self.stamps.id_of)
            self._creation_rank = {uuid: n for n, uuid in enumerate(ordered)}
        return self._creation_rank

    def creation_key(self, count: int) -> Callable[[str], int]:
        """A sort key putting ``count`` UUIDs in creation (id) order.

        After a tree changed, the rank of every provider is gone; a listing
        of one tree (every host's periodic refresh asks for one) sorts by
        its providers' own ids instead of ranking the whole world again.
        """
        if self._creation_rank is None and count * 8 < len(self.stamps):
            return self.stamps.id_of
        return self.creation_rank().__getitem__

    def root_uuids(self, root_ids: Iterable[int]) -> list[str]:
        """UUIDs of the providers with these ids that the world knows."""
        return [u for u in map(self.uuid_of_id.get, root_ids) if u is not None]

    # -- changes ---------------------------------------------------------------

    def replace_trees(self, root_ids: Iterable[int], loaded: Mapping[int, LoadedProvider]) -> None:
        """The trees whose roots were ``root_ids`` are now exactly ``loaded``."""
        loaded, damaged = split_damaged(loaded)
        for p in loaded.values():
            self.damaged.pop(p.uuid, None)
        self.damaged.update(damaged)
        snap = self.snapshot
        old_roots = self.root_uuids(set(root_ids))
        before: set[str] = set()
        for uuid in old_roots:
            i = snap.index.get(uuid)
            if i is not None:
                before.update(snap.uuids[m] for m in snap.tree_members(snap.root[i]))
        for uuid in before | {p.uuid for p in loaded.values()}:
            i = snap.index.get(uuid)
            if i is not None and self.by_name.get(snap.name_of(i)) == uuid:
                del self.by_name[snap.name_of(i)]
        # The ids of the providers that go, while the snapshot still holds them.
        kept = {p.uuid for p in loaded.values()}
        for uuid in before - kept:
            self.uuid_of_id.pop(self.stamps.id_of(uuid), None)
        snap.replace_trees(old_roots, records_of(loaded))
        self._creation_rank = None
        self._remember(loaded)

    def apply(self, changes: Changes) -> bool:
        """Bring the world up to date with ``changes`` (see storage.cursor).

        False, leaving the world as it was, when that cannot be done in
        place: a class id now has another name, and inventories and usage
        are kept by class name.  Then the world is to be read whole.
        """
        fresh, trees = changes.fresh, changes.trees
        if changes.names is not None:
            names = Names(*changes.names)
            if names.renames_classes_of(self.names):
                return False
            self.set_names(names)
        if changes.roots:
            self.replace_trees(changes.roots, trees)
            if fresh:
                self.set_usage(fresh, changes.usage)
        for e in changes.entries:
            if e.usage:
                # A fresh provider's usage was read whole: its deltas are in
                # it, and a note about an id it reuses is not about it.
                self.add_usage(d for d in e.usage if d[0] not in fresh)
            if e.generations:
                # A reloaded provider's generation is already the one of this
                # snapshot.  Its id may even have belonged to another provider
                # when the note was written (SQLite reuses the highest id
                # after a delete), so the note must not touch it.
                self.touch(g for g in e.generations if g[0] not in trees)
        return True

    def add_usage(self, deltas: Iterable[tuple[int, int, int]]) -> None:
        self.snapshot.add_usage(self._usage_deltas(deltas))

    def set_usage(self, provider_ids: Iterable[int],
                  used: Iterable[tuple[int, int, int]]) -> None:
        """The usage of these providers is now exactly ``used``
        (``(provider id, class id, amount)``; pairs not named hold nothing)."""
        snap = self.snapshot
        wanted: dict[tuple[str, str], int] = {
            (uuid, rc): amount for uuid, rc, amount in self._usage_deltas(used)}
        deltas = []
        for pid in provider_ids:
            uuid = self.uuid_of_id.get(pid)
            if uuid is None:
                continue
            for rc, amount in snap.used.get(uuid, {}).items():
                deltas.append((uuid, rc, wanted.pop((uuid, rc), 0) - amount))
        deltas.extend((uuid, rc, amount) for (uuid, rc), amount in wanted.items())
        snap.add_usage(deltas)

    def touch(self, generations: Iterable[tuple[int, int, datetime.datetime]]) -> None:
        """A write moved these providers' generations, and ``updated_at`` with them.

        Both only move forwards, so notes applied out of order leave the newest.
        """
        for pid, generation, when in generations:
            uuid = self.uuid_of_id.get(pid)
            if uuid is None:
                continue
            self.snapshot.set_generation(uuid, generation)
            self.stamps.touch(uuid, when)
