"""An in-memory model of provider trees, safe to share between threads.

A :class:`ProviderTree` holds one or more trees (a host's tree and the
sharing providers associated with it are typical), each provider with its
inventory, traits and aggregates.  Drivers describe the tree they *want*
by editing a copy; the client compares that with what the service has and
writes the difference (see _tree_sync.py).  Providers are found by uuid or by
name: Placement keeps names unique, so either identifies one provider.
"""

from __future__ import annotations

import copy
import threading
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from allotment.client.inventories import normalise


@dataclass(frozen=True)
class ProviderData:
    """A read-only snapshot of one provider."""

    uuid: str
    name: str
    generation: int | None
    parent_uuid: str | None
    root_uuid: str
    inventory: Mapping[str, Mapping[str, Any]]
    traits: frozenset[str]
    aggregates: frozenset[str]


class _Node:
    __slots__ = ("aggregates", "children", "generation", "inventory", "name",
                 "parent_uuid", "traits", "uuid")

    def __init__(self, uuid: str, name: str, generation: int | None,
                 parent_uuid: str | None) -> None:
        self.uuid = uuid
        self.name = name
        self.generation = generation
        self.parent_uuid = parent_uuid
        self.children: dict[str, _Node] = {}
        self.inventory: dict[str, dict[str, Any]] = {}
        self.traits: set[str] = set()
        self.aggregates: set[str] = set()

    def walk(self) -> Iterator[_Node]:
        """This node then its descendants, parents before children."""
        yield self
        for child in self.children.values():
            yield from child.walk()


def inventory_changed(current: Mapping[str, Mapping[str, Any]],
                      wanted: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether writing ``wanted`` would change ``current``.

    Fields left out of a record take the service's defaults, so
    ``{"total": 8}`` equals a stored record with reserved 0, ratio 1.0 ...
    """
    if set(current) != set(wanted):
        return True
    return any(normalise(current[rc]) != normalise(wanted[rc]) for rc in wanted)


class ProviderTree:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._roots: dict[str, _Node] = {}
        self._by_uuid: dict[str, _Node] = {}
        self._revision = 0

    # -- change tracking ---------------------------------------------------

    @property
    def revision(self) -> int:
        """A counter bumped by every change; compare with
        :meth:`changed_since` to learn whether anything moved."""
        return self._revision

    def changed_since(self, revision: int) -> bool:
        return self._revision != revision

    def _touch(self) -> None:
        self._revision += 1

    # -- lookup ------------------------------------------------------------

    def _find(self, name_or_uuid: str) -> _Node | None:
        node = self._by_uuid.get(name_or_uuid)
        if node is not None:
            return node
        return next((n for n in self._by_uuid.values() if n.name == name_or_uuid), None)

    def _find_name(self, name: str) -> _Node | None:
        return next((n for n in self._by_uuid.values() if n.name == name), None)

    def _get(self, name_or_uuid: str) -> _Node:
        node = self._find(name_or_uuid)
        if node is None:
            raise ValueError(f"No such provider {name_or_uuid}")
        return node

    def exists(self, name_or_uuid: str) -> bool:
        with self.lock:
            return self._find(name_or_uuid) is not None

    def data(self, name_or_uuid: str) -> ProviderData:
        with self.lock:
            node = self._get(name_or_uuid)
            return ProviderData(
                uuid=node.uuid, name=node.name, generation=node.generation,
                parent_uuid=node.parent_uuid, root_uuid=self._root_of(node).uuid,
                inventory=copy.deepcopy(node.inventory), traits=frozenset(node.traits),
                aggregates=frozenset(node.aggregates))

    def _root_of(self, node: _Node) -> _Node:
        while node.parent_uuid is not None:
            node = self._by_uuid[node.parent_uuid]
        return node

    def root_uuids(self) -> list[str]:
        with self.lock:
            return list(self._roots)

    def get_provider_uuids(self, name_or_uuid: str | None = None) -> list[str]:
        """Uuids of the subtree at ``name_or_uuid`` (every tree when None),
        parents before children."""
        with self.lock:
            starts = [self._get(name_or_uuid)] if name_or_uuid else list(self._roots.values())
            return [n.uuid for start in starts for n in start.walk()]

    def get_provider_uuids_in_tree(self, name_or_uuid: str) -> list[str]:
        """Uuids of the whole tree containing ``name_or_uuid``."""
        with self.lock:
            return [n.uuid for n in self._root_of(self._get(name_or_uuid)).walk()]

    def __iter__(self) -> Iterator[ProviderData]:
        """Snapshots of every provider, parents first, taken all at once."""
        with self.lock:
            return iter([self.data(uuid) for uuid in self.get_provider_uuids()])

    def __len__(self) -> int:
        with self.lock:
            return len(self._by_uuid)

    def __contains__(self, name_or_uuid: object) -> bool:
        return isinstance(name_or_uuid, str) and self.exists(name_or_uuid)

    # -- structure ---------------------------------------------------------

    def _add(self, name: str, uuid: str | None, generation: int | None,
             parent: _Node | None) -> str:
        uuid = uuid or str(uuidlib.uuid4())
        if uuid in self._by_uuid:
            raise ValueError(f"Provider {uuid} already exists")
        if self._find_name(name) is not None:
            raise ValueError(f"Provider named {name} already exists")
        node = _Node(uuid, name, generation, parent.uuid if parent else None)
        (parent.children if parent else self._roots)[uuid] = node
        self._by_uuid[uuid] = node
        self._touch()
        return uuid

    def new_root(self, name: str, uuid: str | None = None,
                 generation: int | None = None) -> str:
        """Add a root provider; returns its uuid (generated when not given).
        ``generation`` None means "not in the service yet"."""
        with self.lock:
            return self._add(name, uuid, generation, None)

    def new_child(self, name: str, parent: str, uuid: str | None = None,
                  generation: int | None = None) -> str:
        with self.lock:
            return self._add(name, uuid, generation, self._get(parent))

    def remove(self, name_or_uuid: str) -> None:
        """Remove a provider and its whole subtree."""
        with self.lock:
            node = self._get(name_or_uuid)
            for n in node.walk():
                del self._by_uuid[n.uuid]
            if node.parent_uuid is None:
                del self._roots[node.uuid]
            else:
                del self._by_uuid[node.parent_uuid].children[node.uuid]
            self._touch()

    def rename(self, name_or_uuid: str, name: str) -> None:
        with self.lock:
            node = self._get(name_or_uuid)
            other = self._find_name(name)
            if other is not None and other is not node:
                raise ValueError(f"Provider named {name} already exists")
            if node.name != name:
                node.name = name
                self._touch()

    def update_generation(self, name_or_uuid: str, generation: int | None) -> None:
        with self.lock:
            node = self._get(name_or_uuid)
            if node.generation != generation:
                node.generation = generation
                self._touch()

    def populate_from_iterable(self, providers: Iterable[Any]) -> None:
        """Add or refresh providers from dicts or objects with ``uuid``,
        ``name``, ``generation`` and ``parent_provider_uuid``.  Parents may
        come after children in the input; a provider whose parent is neither
        in the input nor in the tree is an error."""
        def get(p: Any, key: str) -> Any:
            return p.get(key) if isinstance(p, Mapping) else getattr(p, key, None)

        with self.lock:
            pending = list(providers)
            known = {get(p, "uuid") for p in pending}
            while pending:
                rest = []
                for p in pending:
                    uuid, parent = get(p, "uuid"), get(p, "parent_provider_uuid")
                    if parent is not None and parent not in self._by_uuid:
                        if parent not in known:
                            raise ValueError(f"Parent {parent} of {uuid} is unknown")
                        rest.append(p)
                        continue
                    node = self._by_uuid.get(uuid)
                    if node is None:
                        self._add(get(p, "name"), uuid, get(p, "generation"),
                                  self._by_uuid.get(parent) if parent else None)
                    else:
                        if node.parent_uuid != parent:
                            raise ValueError(f"Provider {uuid} changed parent; rebuild the tree")
                        self.rename(uuid, get(p, "name"))
                        self.update_generation(uuid, get(p, "generation"))
                if len(rest) == len(pending):
                    raise ValueError("Providers form a cycle")
                pending = rest

    # -- inventory -----------------------------------------------------------

    def has_inventory_changed(self, name_or_uuid: str,
                              inventory: Mapping[str, Mapping[str, Any]]) -> bool:
        with self.lock:
            return inventory_changed(self._get(name_or_uuid).inventory, inventory)

    def update_inventory(self, name_or_uuid: str, inventory: Mapping[str, Mapping[str, Any]],
                         generation: int | None = None) -> bool:
        """Set the inventory (and the generation, when given); True if the
        inventory differed."""
        with self.lock:
            node = self._get(name_or_uuid)
            if generation is not None:
                self.update_generation(node.uuid, generation)
            if not inventory_changed(node.inventory, inventory):
                return False
            node.inventory = {rc: dict(rec) for rc, rec in inventory.items()}
            self._touch()
            return True

    # -- traits --------------------------------------------------------------

    def has_traits(self, name_or_uuid: str, traits: Iterable[str]) -> bool:
        with self.lock:
            return set(traits) <= self._get(name_or_uuid).traits

    def have_traits_changed(self, name_or_uuid: str, traits: Iterable[str]) -> bool:
        with self.lock:
            return set(traits) != self._get(name_or_uuid).traits

    def update_traits(self, name_or_uuid: str, traits: Iterable[str],
                      generation: int | None = None) -> bool:
        return self._replace_set(name_or_uuid, "traits", traits, generation)

    def add_traits(self, name_or_uuid: str, *traits: str) -> None:
        with self.lock:
            self.update_traits(name_or_uuid, self._get(name_or_uuid).traits | set(traits))

    def remove_traits(self, name_or_uuid: str, *traits: str) -> None:
        with self.lock:
            self.update_traits(name_or_uuid, self._get(name_or_uuid).traits - set(traits))

    # -- aggregates ----------------------------------------------------------

    def in_aggregates(self, name_or_uuid: str, aggregates: Iterable[str]) -> bool:
        with self.lock:
            return set(aggregates) <= self._get(name_or_uuid).aggregates

    def have_aggregates_changed(self, name_or_uuid: str, aggregates: Iterable[str]) -> bool:
        with self.lock:
            return set(aggregates) != self._get(name_or_uuid).aggregates

    def update_aggregates(self, name_or_uuid: str, aggregates: Iterable[str],
                          generation: int | None = None) -> bool:
        return self._replace_set(name_or_uuid, "aggregates", aggregates, generation)

    def _replace_set(self, name_or_uuid: str, field: str, values: Iterable[str],
                     generation: int | None) -> bool:
        """A provider's traits or aggregates replaced by ``values``;
        whether they changed (the generation is taken either way)."""
        with self.lock:
            node = self._get(name_or_uuid)
            if generation is not None:
                self.update_generation(node.uuid, generation)
            new = set(values)
            if new == getattr(node, field):
                return False
            setattr(node, field, new)
            self._touch()
            return True

    def add_aggregates(self, name_or_uuid: str, *aggregates: str) -> None:
        with self.lock:
            node = self._get(name_or_uuid)
            self.update_aggregates(name_or_uuid, node.aggregates | set(aggregates))

    def remove_aggregates(self, name_or_uuid: str, *aggregates: str) -> None:
        with self.lock:
            node = self._get(name_or_uuid)
            self.update_aggregates(name_or_uuid, node.aggregates - set(aggregates))

    # -- copies ----------------------------------------------------------------

    def __deepcopy__(self, memo: dict) -> ProviderTree:
        with self.lock:
            other = ProviderTree()
            for root in self._roots.values():
                for node in root.walk():
                    parent = other._by_uuid.get(node.parent_uuid) if node.parent_uuid else None
                    other._add(node.name, node.uuid, node.generation, parent)
                    new = other._by_uuid[node.uuid]
                    new.inventory = copy.deepcopy(node.inventory)
                    new.traits = set(node.traits)
                    new.aggregates = set(node.aggregates)
            other._revision = self._revision
            return other

    def copy(self) -> ProviderTree:
        """A deep copy sharing nothing (not even the lock) with this tree."""
        return copy.deepcopy(self)

    def copy_subtrees(self, uuids: Iterable[str]) -> ProviderTree:
        """A deep copy holding only the trees rooted at ``uuids``."""
        with self.lock:
            other = self.copy()
            keep = set(uuids)
            for root in list(other._roots):
                if root not in keep:
                    other.remove(root)
            other._revision = self._revision
            return other
