"""GET /resource_providers: filter the in-memory world.

Listing every provider, or every provider with room for some resources,
used to be a join over providers, inventories and a GROUP BY of all
allocations per request.  The process's world (``allotment.world``) holds
all of it already, current as of the request's start, so filters become set
lookups: the work follows the size of the answer.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from allotment import errors
from allotment.engine.live import LiveSnapshot
from allotment.engine.snapshot import MAX_UNIT, MIN_UNIT, RATIO, RESERVED, STEP_SIZE, TOTAL
from allotment.world.model import World
from allotment.world.sync import Replica

T = TypeVar("T")

# Placement's largest amount (a signed 32-bit integer): no inventory holds more.
MAX_AMOUNT = 0x7FFFFFFF


@dataclass(frozen=True)
class ProviderView:
    """What a listing says about one provider."""

    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    # Changes whenever anything above does: renderers may keep what they make
    # of a view for as long as its revision stays.
    revision: tuple


def _bad_trait(name: str) -> errors.BadRequest:
    return errors.BadRequest(
        f'Invalid trait(s) in "required" parameter: No such trait(s): {name}.')


def refuse_damaged(world: World, uuid: str | None) -> None:
    """Refuse a request about a provider the world keeps out because its
    parent links are broken in the database (see world.model.split_damaged);
    the rest of the world is served as usual."""
    why = world.damaged.get(uuid) if uuid is not None else None
    if why is not None:
        raise errors.Conflict(
            f"Resource provider {uuid} cannot be served: {why} in the database. "
            "An operator must repair its parent_provider_id and root_provider_id.")


def _view(world: World, snap: LiveSnapshot, uuid: str,
          memo: dict[str, object]) -> ProviderView:
    rev = snap.revision(uuid)
    found = memo.get(uuid)
    if found is not None and found.revision[1] == rev:
        return found
    revision = (uuid, rev)
    i = snap.index[uuid]
    stamps = world.stamps
    p = snap.parent[i]
    view = memo[uuid] = ProviderView(
        uuid=uuid, name=snap.name_of(i), generation=snap.generation_of(i),
        parent_provider_uuid=None if p == -1 else snap.uuids[p],
        root_provider_uuid=snap.uuids[snap.root[i]],
        created_at=stamps.created_at[i], updated_at=stamps.updated_at[i], revision=revision)
    return view


def _anyone_has(sets_of, any_ofs, among: Iterable[int]) -> bool:
    """Whether a provider among ``among`` has one of each of ``any_ofs``."""
    return any(all(not any_of.isdisjoint(sets_of[i]) for any_of in any_ofs) for i in among)


def show(replica: Replica, uuid: str) -> ProviderView | None:
    """One provider as the world has it, or None if the world has no such
    UUID (the caller asks the tables then: a database may match a UUID
    written differently, as MySQL's case-insensitive collations do)."""
    with replica.current() as world:
        refuse_damaged(world, uuid)
        snap = world.snapshot
        if uuid not in snap.index:
            return None
        return _view(world, snap, uuid, world.memo("provider_view"))


def list_providers(replica: Replica, filters) -> list[ProviderView]:
    """Providers matching every filter, in the order they were created.

    ``filters`` is a ``service.resource_providers.ProviderFilters``.  Checks
    run in upstream's order, so a filter that already rules everything out
    (an unknown in_tree provider) answers an empty list before later filters
    are examined.
    """
    with replica.current() as world:
        refuse_damaged(world, filters.in_tree)
        memo = world.memo("provider_view")
        return [_view(world, world.snapshot, u, memo) for u in _matching(world, filters)]


def list_made(replica: Replica, filters, shape: Hashable,
              made: Callable[[ProviderView], T]) -> list[T]:
    """:func:`list_providers`, each provider as ``made(view)`` makes it
    (its body as the API renders it, say).

    What ``made`` returns is kept in the world's cache with the provider's
    revision and ``shape`` (whatever else it depends on, e.g. the
    microversion) and handed out again while neither changes: big listings
    are mostly the same providers as last time.
    """
    with replica.current() as world:
        refuse_damaged(world, filters.in_tree)
        snap = world.snapshot
        views = world.memo("provider_view")
        kept = world.memo(("provider_made", shape))
        out = []
        for uuid in _matching(world, filters):
            view = _view(world, snap, uuid, views)
            found = kept.get(uuid)
            if found is None or found[0] != view.revision:
                found = kept[uuid] = (view.revision, made(view))
            out.append(found[1])
        return out


@dataclass(frozen=True)
class ProviderDetail:
    """What a provider's inventories, usages, traits and aggregates
    readings say, as the listing's extension adds them."""

    inventories: dict[str, dict[str, int | float]]
    usages: dict[str, int]
    traits: list[str]
    aggregates: list[str]


def list_with_details(replica: Replica, filters, shape: Hashable,
                      made: Callable[[ProviderView, ProviderDetail], T]) -> list[T]:
    """:func:`list_providers`, each provider with its details, all read
    from one state of the world, as ``made(view, detail)`` makes them.

    What ``made`` returns is kept with the provider's revision and
    ``shape`` (whatever else it depends on, e.g. the microversion) and
    handed out again while neither changes: a large listing asked again is
    mostly what was made before.
    """
    with replica.current() as world:
        refuse_damaged(world, filters.in_tree)
        snap = world.snapshot
        views = world.memo("provider_view")
        kept = world.memo("provider_detail")
        ids = world.names.class_id
        out = []
        for uuid in _matching(world, filters):
            view = _view(world, snap, uuid, views)
            found = kept.get(uuid)
            if found is not None and found[0] == view.revision \
                    and found[1] == (shape, world.names_version):
                out.append(found[2])
                continue
            i = snap.index[uuid]
            inventory = snap.inventory[i] or {}
            used = snap.used.get(uuid, {})
            classes = sorted(inventory, key=lambda rc: ids.get(rc, 0))
            item = made(view, ProviderDetail(
                inventories={rc: {
                    "total": inventory[rc][TOTAL], "reserved": inventory[rc][RESERVED],
                    "min_unit": inventory[rc][MIN_UNIT], "max_unit": inventory[rc][MAX_UNIT],
                    "step_size": inventory[rc][STEP_SIZE],
                    "allocation_ratio": inventory[rc][RATIO]} for rc in classes},
                usages={rc: used.get(rc, 0) for rc in classes},
                traits=sorted(snap.traits[i]), aggregates=sorted(snap.aggregates[i])))
            kept[uuid] = (view.revision, (shape, world.names_version), item)
            out.append(item)
        return out


def _matching(world: World, filters) -> list[str]:
    """UUIDs of the providers matching every filter, in creation order."""
    snap = world.snapshot
    chosen: Iterable[int] | None = None
    if filters.in_tree is not None:
        i = snap.index.get(filters.in_tree)
        if i is None:
            return []
        chosen = snap.tree_members(snap.root[i])
    known_traits = world.names.trait_rank
    for any_of in filters.required_traits:
        for name in sorted(any_of):
            if name not in known_traits:
                raise _bad_trait(name)
    # As upstream: traits or aggregates that no provider anywhere has end
    # the request (empty) before the names of later filters are looked up.
    everyone = snap.index.values()
    if filters.required_traits and not _anyone_has(
            snap.traits, filters.required_traits, everyone):
        return []
    for name in sorted(filters.forbidden_traits):
        if name not in known_traits:
            raise _bad_trait(name)
    if filters.member_of and not _anyone_has(
            snap.aggregates, filters.member_of,
            set().union(*(snap.agg_members.get(a, ()) for a in filters.member_of[0]))):
        return []
    classes = world.names.classes
    for name in filters.resources:
        if name not in classes:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: No such "
                f"resource class {name}.")
    if any(amount > MAX_AMOUNT for amount in filters.resources.values()):
        return []  # no inventory can hold that much

    # Start from the narrowest set a filter names, then check the rest.
    if filters.uuid is not None:
        i = snap.index.get(filters.uuid)
        narrow: Iterable[int] = () if i is None else (i,)
        chosen = narrow if chosen is None else set(chosen) & set(narrow)
    if filters.name is not None:
        uuid = world.by_name.get(filters.name)
        narrow = () if uuid is None else (snap.index[uuid],)
        chosen = narrow if chosen is None else set(chosen) & set(narrow)
    if chosen is None and filters.member_of:
        chosen = set().union(*(snap.agg_members.get(a, ()) for a in filters.member_of[0]))
    if chosen is None and filters.resources:
        chosen = snap.by_rc.get(next(iter(filters.resources)), ())
    if chosen is None:
        chosen = snap.index.values()

    traits, aggregates = snap.traits, snap.aggregates
    uuids = snap.uuids
    wanted = tuple(filters.resources.items())
    if not (filters.required_traits or filters.forbidden_traits or filters.member_of
            or filters.forbidden_aggregates or filters.resources):
        found = [uuids[i] for i in chosen]
        chosen = ()
    else:
        found = []
    for i in chosen:
        have = traits[i]
        if any(any_of.isdisjoint(have) for any_of in filters.required_traits):
            continue
        if not filters.forbidden_traits.isdisjoint(have):
            continue
        aggs = aggregates[i]
        if any(any_of.isdisjoint(aggs) for any_of in filters.member_of):
            continue
        if not filters.forbidden_aggregates.isdisjoint(aggs):
            continue
        if wanted and not snap.has_room(i, wanted):
            continue
        found.append(uuids[i])
    found.sort(key=world.creation_key(len(found)))
    return found


def usages(replica: Replica, uuid: str) -> tuple[int, dict[str, int]] | None:
    """(generation, usage of every class it has inventory of), or None.

    What GET /resource_providers/{uuid}/usages reports, from the world: the
    usage kept there is the sum of the provider's allocations as of this
    request, as a fresh SUM over the allocations table would be.
    """
    with replica.current() as world:
        refuse_damaged(world, uuid)
        snap = world.snapshot
        i = snap.index.get(uuid)
        if i is None:
            return None
        used = snap.used.get(uuid, {})
        ids = world.names.class_id
        # In class id order, as upstream lists them.
        return snap.generation_of(i), {
            rc: used.get(rc, 0)
            for rc in sorted(snap.inventory[i] or (), key=lambda rc: ids.get(rc, 0))}
