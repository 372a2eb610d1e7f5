"""Keeping the service in step with a :class:`ProviderTree`.

:class:`TreeSync` remembers, per client, the last known service state of
the trees it manages (the *cache*, itself a ProviderTree with generations).
``update_from_provider_tree`` compares a desired tree with the cache and
writes only the differences, in an order that never shows the scheduler
more capacity than really exists:

1. delete providers that disappeared, children before parents (a provider
   holding allocations refuses, which is right: that needs a reshape);
2. create new providers, parents before children;
3. rename / re-parent;
4. inventories — first those that lose capacity, then those that gain it,
   so capacity moving between providers is never counted twice;
5. aggregates, then traits: a trait describes inventory that must already
   be in place (and survives unchanged if the inventory write fails).

Every write carries the cached generation.  On a generation conflict the
provider is re-read and, if the change is still needed, written once more;
a second conflict is raised.  With ``allocations`` (a reshape) step 4 and
the allocations go in one ``POST /reshaper`` instead, and deletions come
last, once the allocations have left the doomed providers.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from allotment.client import exceptions as exc
from allotment.client import versions as mv
from allotment.client.aggregates import Aggregates
from allotment.client.inventories import Inventories, capacity
from allotment.client.provider_tree import ProviderTree
from allotment.client.providers import Provider, Providers
from allotment.client.reshaper import Reshaper
from allotment.client.traits import ProviderTraits

LOG = logging.getLogger(__name__)

_UUID = re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$")


def _loses_capacity(current: Mapping[str, Mapping[str, Any]],
                    wanted: Mapping[str, Mapping[str, Any]]) -> bool:
    return any(rc not in wanted or capacity(wanted[rc]) < capacity(rec)
               for rc, rec in current.items())


class SyncedClient(Protocol):
    """The nouns tree synchronisation writes through, at the client's
    microversion (the client that holds a TreeSync is one: typed this way,
    the client and its synchroniser do not import each other)."""

    microversion: str
    providers: Providers
    inventories: Inventories
    aggregates: Aggregates
    provider_traits: ProviderTraits
    reshaper: Reshaper


class TreeSync:
    def __init__(self, client: SyncedClient) -> None:
        self.client = client
        self.cache = ProviderTree()
        # Sharing providers found for each managed root, refreshed with it.
        self._sharing: dict[str, set[str]] = {}
        self.lock = threading.RLock()

    def clear(self) -> None:
        with self.lock:
            self.cache = ProviderTree()
            self._sharing.clear()

    # -- reading the service ---------------------------------------------------

    def _load_facets(self, uuid: str) -> None:
        """Inventory, aggregates and traits of a cached provider, from the service."""
        c, version = self.client, self.client.microversion
        inv = c.inventories.get(uuid)
        self.cache.update_inventory(uuid, inv.inventories, inv.resource_provider_generation)
        if mv.at_least(version, "aggregates"):
            self.cache.update_aggregates(uuid, c.aggregates.get(uuid).aggregates)
        if mv.at_least(version, "traits"):
            traits = c.provider_traits.get(uuid)
            self.cache.update_traits(uuid, traits.traits, traits.resource_provider_generation)

    def _drop(self, uuid: str) -> None:
        if self.cache.exists(uuid):
            self.cache.remove(uuid)

    def refresh_tree(self, uuid: str) -> str | None:
        """Re-read the whole tree containing ``uuid`` and its sharing
        providers into the cache; returns the root uuid (None if gone)."""
        c = self.client
        with self.lock:
            mv.require(c.microversion, "nested_providers")
            try:
                providers = c.providers.in_tree(uuid)
            except (exc.NotFound, exc.BadRequest):
                providers = []
            for known in ([uuid] + [p.uuid for p in providers]):
                if self.cache.exists(known):
                    self._drop(self.cache.data(known).root_uuid)
            if not providers:
                return None
            root = next(p.uuid for p in providers if p.parent_provider_uuid is None)
            self.cache.populate_from_iterable(providers)
            aggregates: set[str] = set()
            for p in providers:
                self._load_facets(p.uuid)
                aggregates |= self.cache.data(p.uuid).aggregates
            self._refresh_sharing(root, aggregates, {p.uuid for p in providers})
            return root

    def _refresh_sharing(self, root: str, aggregates: set[str], own: set[str]) -> None:
        sharing = set()
        if aggregates and mv.at_least(self.client.microversion, "required_traits_filter"):
            for p in self.client.providers.sharing(aggregates):
                if p.uuid in own:
                    continue
                # Kept as a root of its own: we see it, we do not own its tree.
                self._drop(p.uuid)
                self.cache.new_root(p.name, p.uuid, p.generation)
                self._load_facets(p.uuid)
                sharing.add(p.uuid)
        self._sharing[root] = sharing

    def _refresh_provider(self, uuid: str) -> bool:
        """Re-read one cached provider; False when it no longer exists."""
        provider = self.client.providers.find(uuid)
        if provider is None:
            self._drop(uuid)
            return False
        self.cache.update_generation(uuid, provider.generation)
        self._load_facets(uuid)
        return True

    def resolve(self, name_or_uuid: str) -> str:
        """A provider uuid from a uuid or a name (cache first, then service)."""
        if self.cache.exists(name_or_uuid):
            return self.cache.data(name_or_uuid).uuid
        if _UUID.match(name_or_uuid):
            return name_or_uuid
        found = self.client.providers.list(name=name_or_uuid)
        if not found:
            raise exc.ClientError(f"no resource provider named {name_or_uuid}")
        return found[0].uuid

    def get_provider_tree_and_ensure_root(
        self, name: str, uuid: str | None = None, *, parent_provider_uuid: str | None = None,
    ) -> ProviderTree:
        c = self.client
        with self.lock:
            provider: Provider | None
            if uuid is not None:
                provider = c.providers.find(uuid)
            else:
                found = c.providers.list(name=name)
                provider = found[0] if found else None
            if provider is None:
                try:
                    provider = c.providers.create(
                        name, uuid=uuid, parent_provider_uuid=parent_provider_uuid)
                except exc.DuplicateName:
                    # Someone else created it between our read and write.
                    provider = c.providers.get(uuid) if uuid else c.providers.list(name=name)[0]
            root = self.refresh_tree(provider.uuid) or provider.uuid
            return self.cache.copy_subtrees([root, *sorted(self._sharing.get(root, ()))])

    # -- allocations of a tree -------------------------------------------------

    def get_allocations_for_provider_tree(self, root: str) -> dict[str, dict]:
        """Every consumer with allocations on a provider of the tree, with
        the consumer's *complete* allocations (sharing providers included).

        Consumers are discovered through the tree's own providers only: the
        sharing providers also serve other hosts' consumers, which must not be
        swept up.  Known limitation: a consumer whose allocations are *all*
        on sharing providers is therefore not found.
        """
        c = self.client
        mv.require(c.microversion, "allocations_dict")
        uuid = self.resolve(root)
        consumers: set[str] = set()
        for provider in c.providers.in_tree(uuid):
            consumers.update(c.allocations.for_provider(provider.uuid)["allocations"])
        result: dict[str, dict] = {}
        for consumer in sorted(consumers):
            record = c.allocations.get(consumer)
            if record.get("allocations"):
                result[consumer] = record
        return result

    # -- writing ---------------------------------------------------------------

    def _write(self, uuid: str, needed: Callable[[], bool],
               do: Callable[[int | None], int | None]) -> None:
        """Run ``do(generation)`` if ``needed()``; once more after a refresh
        when the generation was stale."""
        if not needed():
            return
        try:
            new_gen = do(self.cache.data(uuid).generation)
        except exc.GenerationConflict:
            LOG.info("Generation conflict on provider %s; refreshing and retrying", uuid)
            if not self._refresh_provider(uuid):
                raise
            if not needed():
                return
            try:
                new_gen = do(self.cache.data(uuid).generation)
            except exc.GenerationConflict:
                self._refresh_provider(uuid)
                raise
        if new_gen is None:
            provider = self.client.providers.get(uuid)
            new_gen = provider.generation
        self.cache.update_generation(uuid, new_gen)

    def _ensure_names(self, tree: ProviderTree, wanted: list[str]) -> None:
        """Create the custom resource classes and traits that the changed
        providers of the tree use (the service rejects unknown names)."""
        c, cache = self.client, self.cache
        classes, traits = set(), set()
        for uuid in wanted:
            p = tree.data(uuid)
            known = cache.exists(uuid)
            if not known or cache.has_inventory_changed(uuid, p.inventory):
                classes.update(rc for rc in p.inventory if rc.startswith("CUSTOM_"))
            if not known or cache.have_traits_changed(uuid, p.traits):
                traits.update(p.traits)
        for rc in sorted(classes):
            c.resource_classes.ensure(rc)
        if traits:
            c.traits.ensure_all(traits)

    def update_from_provider_tree(self, tree: ProviderTree,
                                  allocations: dict[str, dict] | None = None) -> None:
        with self.lock:
            try:
                self._update(tree, allocations)
            except exc.ClientError:
                # Whatever half-happened, the next call starts from the truth.
                for root in tree.root_uuids():
                    self._forget(root)
                raise

    def _forget(self, root: str) -> None:
        if self.cache.exists(root):
            self._drop(self.cache.data(root).root_uuid)
        for uuid in self._sharing.pop(root, set()):
            self._drop(uuid)

    def _update(self, tree: ProviderTree, allocations: dict[str, dict] | None) -> None:
        cache = self.cache
        roots = tree.root_uuids()
        for root in roots:
            if not cache.exists(root):
                self.refresh_tree(root)
        wanted = tree.get_provider_uuids()
        wanted_set = set(wanted)
        managed = [u for root in roots if cache.exists(root)
                   for u in cache.get_provider_uuids(root)]
        doomed = [u for u in reversed(managed) if u not in wanted_set]
        self._ensure_names(tree, wanted)

        if allocations is None:
            self._delete(doomed)
        self._create(tree, wanted)
        self._move(tree, wanted)
        if allocations is None:
            self._set_inventories(tree, wanted)
        else:
            self._reshape(tree, wanted, allocations)
        for uuid in wanted:
            self._set_aggregates(uuid, tree.data(uuid).aggregates)
        for uuid in wanted:
            self._set_traits(uuid, tree.data(uuid).traits)
        if allocations is not None:
            self._delete(doomed)

    def _delete(self, doomed: Iterable[str]) -> None:
        for uuid in doomed:
            if not self.cache.exists(uuid):
                continue
            with contextlib.suppress(exc.NotFound):
                self.client.providers.delete(uuid)
            self._drop(uuid)

    def _create(self, tree: ProviderTree, wanted: list[str]) -> None:
        for uuid in wanted:
            if self.cache.exists(uuid):
                continue
            data = tree.data(uuid)
            provider = self.client.providers.create(
                data.name, uuid=uuid, parent_provider_uuid=data.parent_uuid)
            if data.parent_uuid is None:
                self.cache.new_root(provider.name, uuid, provider.generation)
                self._sharing.setdefault(uuid, set())
            else:
                self.cache.new_child(provider.name, data.parent_uuid, uuid, provider.generation)

    def _move(self, tree: ProviderTree, wanted: list[str]) -> None:
        """Renames and parent changes (the latter needs 1.37 for existing parents)."""
        for uuid in wanted:
            want, have = tree.data(uuid), self.cache.data(uuid)
            if want.name == have.name and want.parent_uuid == have.parent_uuid:
                continue
            kwargs: dict[str, Any] = {}
            if want.parent_uuid != have.parent_uuid:
                if have.parent_uuid is not None or want.parent_uuid is None:
                    mv.require(self.client.microversion, "reparent")
                kwargs["parent_provider_uuid"] = want.parent_uuid
            self.client.providers.update(uuid, name=want.name, **kwargs)
            if "parent_provider_uuid" in kwargs:
                # The shape changed under the cache: re-read the whole tree.
                self.refresh_tree(uuid)
            else:
                self.cache.rename(uuid, want.name)

    def _set_inventory(self, uuid: str, inventory: Mapping[str, Mapping[str, Any]]) -> None:
        def needed() -> bool:
            return self.cache.has_inventory_changed(uuid, inventory)

        def do(generation: int | None) -> int:
            result = self.client.inventories.set(uuid, inventory, generation or 0)
            self.cache.update_inventory(uuid, result.inventories)
            return result.resource_provider_generation

        self._write(uuid, needed, do)

    def _set_inventories(self, tree: ProviderTree, wanted: list[str]) -> None:
        changed = [u for u in wanted if self.cache.has_inventory_changed(u, tree.data(u).inventory)]
        shrinking = [u for u in changed
                     if _loses_capacity(self.cache.data(u).inventory, tree.data(u).inventory)]
        growing = [u for u in changed if u not in shrinking]
        for uuid in shrinking + growing:
            self._set_inventory(uuid, tree.data(uuid).inventory)

    def _set_aggregates(self, uuid: str, aggregates: Iterable[str]) -> None:
        aggs = set(aggregates)
        if not mv.at_least(self.client.microversion, "aggregates"):
            return

        def needed() -> bool:
            return self.cache.have_aggregates_changed(uuid, aggs)

        def do(generation: int | None) -> int | None:
            result = self.client.aggregates.set(uuid, aggs, generation)
            self.cache.update_aggregates(uuid, result.aggregates)
            return result.resource_provider_generation

        self._write(uuid, needed, do)

    def _set_traits(self, uuid: str, traits: Iterable[str]) -> None:
        wanted = set(traits)
        if not mv.at_least(self.client.microversion, "traits"):
            return

        def needed() -> bool:
            return self.cache.have_traits_changed(uuid, wanted)

        def do(generation: int | None) -> int:
            result = self.client.provider_traits.set(uuid, wanted, generation or 0)
            self.cache.update_traits(uuid, result.traits)
            return result.resource_provider_generation

        self._write(uuid, needed, do)

    def _reshape(self, tree: ProviderTree, wanted: list[str],
                 allocations: dict[str, dict]) -> None:
        """One POST /reshaper with every changed inventory and the allocations.

        Generations are the cached ones, read before the caller fetched the
        allocations: a claim that slipped in since then bumped a generation
        and makes the reshaper refuse, rather than be silently overwritten.
        """
        inventories = {
            uuid: {"inventories": tree.data(uuid).inventory,
                   "resource_provider_generation": self.cache.data(uuid).generation}
            for uuid in wanted
            if self.cache.has_inventory_changed(uuid, tree.data(uuid).inventory)
        }
        LOG.info("Reshaping: inventories of %d providers, allocations of %d consumers",
                 len(inventories), len(allocations))
        try:
            self.client.reshaper.reshape(inventories, allocations)
        except exc.ApiError as e:
            raise exc.ReshapeFailed(f"reshape failed: {e}", cause=e) from e
        # Every provider touched has a new generation; read them all back
        # (refreshing a host's tree re-reads its sharing providers too).
        sharing = set().union(*self._sharing.values()) if self._sharing else set()
        for root in tree.root_uuids():
            if root not in sharing:
                self.refresh_tree(root)
        for root in tree.root_uuids():
            if root in sharing and self.cache.exists(root):
                self._refresh_provider(root)
