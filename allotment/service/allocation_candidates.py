"""GET /allocation_candidates: check the names, search, summarise.

Loading and indexing every provider for each request would dominate the cost
of a search in a big cloud, so each process keeps the *static* part of the
provider world (providers, trees, inventories, traits, aggregates) in memory,
tagged with the topology version it was read at (see storage/topology.py),
and lays the current usage over it per request.  The version and the usage
are read in one read transaction, and the cached world is only used when its
version is the one that transaction sees; since every topology write bumps
the version in its own transaction, a request can never combine a stale
topology with fresh usage.
"""

from __future__ import annotations

import random
import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from allotment import errors
from allotment.engine import search
from allotment.engine.request import AllocationCandidatesRequest, RequestGroup
from allotment.engine.snapshot import Inventory, ProviderRecord, Snapshot
from allotment.storage import snapshot as store
from allotment.storage import topology
from allotment.storage.db import Database


@dataclass(frozen=True)
class ProviderSummary:
    """What ``provider_summaries`` says about one provider."""

    uuid: str
    parent_uuid: str | None
    root_uuid: str
    traits: tuple[str, ...]
    # class name -> (capacity, used), every class the provider has inventory of
    resources: Mapping[str, tuple[int, int]]


@dataclass(frozen=True)
class CandidatesResult:
    candidates: list[search.Candidate]
    summaries: list[ProviderSummary]


EMPTY = CandidatesResult([], [])


# ---------------------------------------------------------------------------
# The per-process cache of the static world


@dataclass(frozen=True)
class _Static:
    """One topology version's world, without usage.

    Besides the engine's snapshot it keeps the few plain indexes the early
    checks (made before any search, see :func:`_check_group`) need.
    """

    version: int
    snapshot: Snapshot
    uuid_by_id: Mapping[int, str]
    class_by_id: Mapping[int, str]
    root_of: Mapping[str, str]
    root_traits: tuple[frozenset[str], ...]
    # class -> [(provider uuid, inventory without usage)]
    by_class: Mapping[str, list[tuple[str, Inventory]]]
    agg_members: Mapping[str, frozenset[str]]
    # Trait name -> id: summaries list traits in id order as Placement does
    # (standard traits first, then custom ones in creation order).
    trait_rank: Mapping[str, int]


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.static: _Static | None = None


_CACHES: weakref.WeakKeyDictionary[Database, _Cache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache_of(db: Database) -> _Cache:
    with _CACHES_LOCK:
        cache = _CACHES.get(db)
        if cache is None:
            cache = _CACHES[db] = _Cache()
        return cache


def _build_static(conn, version: int) -> _Static:
    world = store.load(conn)
    records = []
    by_class: dict[str, list[tuple[str, Inventory]]] = {}
    agg_members: dict[str, set[str]] = {}
    # Most hosts of a cloud have identical inventories: one object each.
    interned: dict[tuple, Inventory] = {}
    for p in world.values():
        inventories = {}
        for rc, fields in p["inventories"].items():
            inventory = interned.get(fields)
            if inventory is None:
                inventory = interned[fields] = Inventory(*fields)
            inventories[rc] = inventory
        for rc, inv in inventories.items():
            by_class.setdefault(rc, []).append((p["uuid"], inv))
        for agg in p["aggregates"]:
            agg_members.setdefault(agg, set()).add(p["uuid"])
        records.append(ProviderRecord(
            uuid=p["uuid"], name=p["name"], generation=p["generation"],
            parent_uuid=p["parent_uuid"], root_uuid=p["root_uuid"],
            inventories=inventories, traits=frozenset(p["traits"]),
            aggregates=frozenset(p["aggregates"])))
    return _Static(
        version=version,
        snapshot=Snapshot.build(records),
        uuid_by_id={pid: p["uuid"] for pid, p in world.items()},
        class_by_id=store.class_names(conn),
        root_of={p["uuid"]: p["root_uuid"] for p in world.values()},
        root_traits=tuple(frozenset(p["traits"]) for p in world.values()
                          if p["parent_uuid"] is None),
        by_class=by_class,
        agg_members={a: frozenset(m) for a, m in agg_members.items()},
        trait_rank=store.trait_ids(conn))


def _static(db: Database, conn, version: int) -> _Static:
    """The static world at ``version``, read through ``conn`` if not cached."""
    cache = _cache_of(db)
    static = cache.static
    if static is not None and static.version == version:
        return static
    # One builder at a time: concurrent requests at a new version wait for it
    # rather than all loading the same world.
    with cache.lock:
        static = cache.static
        if static is not None and static.version == version:
            return static
        built = _build_static(conn, version)
        # An older transaction must not replace a newer world.
        if cache.static is None or cache.static.version < version:
            cache.static = built
        return built


def _with_usage(static: _Static, rows: Iterable[tuple[int, int, int]]) -> Snapshot:
    used: dict[str, dict[str, int]] = {}
    for provider_id, class_id, amount in rows:
        uuid = static.uuid_by_id.get(provider_id)
        rc = static.class_by_id.get(class_id)
        if uuid is not None and rc is not None:
            used.setdefault(uuid, {})[rc] = amount
    return static.snapshot.with_usage(used)


# ---------------------------------------------------------------------------
# Checks made in the order Placement makes them


class _NoCandidates(Exception):
    """Placement gives up on the request early and answers an empty result."""


def _named(request: AllocationCandidatesRequest) -> tuple[set[str], set[str]]:
    classes: set[str] = set()
    traits = set(request.root_required) | set(request.root_forbidden)
    for g in request.groups:
        classes.update(g.resources)
        traits.update(g.forbidden_traits)
        for any_of in g.required_traits:
            traits.update(any_of)
    return classes, traits


def _check_traits(names: Iterable[str], known: set[str]) -> None:
    missing = sorted(set(names) - known)
    if missing:
        # Placement stops at the first trait it cannot find.
        raise errors.BadRequest(f"No such trait(s): {missing[0]}.")


def _check_root_traits(static: _Static, request: AllocationCandidatesRequest,
                       traits: set[str]) -> None:
    required, forbidden = request.root_required, request.root_forbidden
    if not (required or forbidden):
        return
    _check_traits(required, traits)
    _check_traits(forbidden, traits)
    if not any(required <= have and forbidden.isdisjoint(have)
               for have in static.root_traits):
        raise _NoCandidates


def _check_group(static: _Static, snap: Snapshot, group: RequestGroup,
                 classes: set[str], traits: set[str]) -> None:
    for rc in group.resources:
        if rc not in classes:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: "
                f"No such resource class {rc}.")
    if group.member_of:
        members: set[str] | None = None
        for any_of in group.member_of:
            found = set().union(*(static.agg_members.get(a, ()) for a in any_of))
            members = found if members is None else members & found
        if not members:
            raise _NoCandidates
    for any_of in group.required_traits:
        _check_traits(any_of, traits)
    _check_traits(group.forbidden_traits, traits)
    tree_root = None
    if group.in_tree is not None:
        tree_root = static.root_of.get(group.in_tree)
        if tree_root is None:
            raise _NoCandidates
    for rc, amount in group.resources.items():
        if not any(
                inv.min_unit <= amount <= inv.max_unit
                and amount % inv.step_size == 0
                and snap.usage_of(uuid, rc) + amount <= inv.capacity
                for uuid, inv in static.by_class.get(rc, ())
                if tree_root is None or static.root_of[uuid] == tree_root):
            raise _NoCandidates


# ---------------------------------------------------------------------------
# The use case


def find(
    db: Database,
    request: AllocationCandidatesRequest,
    *,
    max_candidates: int = -1,
    strategy: str = "depth-first",
    randomize: bool = False,
    rng: random.Random | None = None,
) -> CandidatesResult:
    """Candidates for ``request`` and the summaries of the providers around them.

    Raises errors.BadRequest for resource classes or traits that do not
    exist, in the order Placement checks them; where Placement gives up
    early with an empty answer (no provider in a member_of aggregate, an
    unknown in_tree provider, no room for some class at all), so do we,
    before looking at the rest of the request.
    """
    classes, traits = _named(request)
    with db.read() as conn:
        version = topology.topology_version(conn)
        static = _static(db, conn, version)
        usage = store.usage(conn)
        known_classes, known_traits = store.existing_names(conn, classes, traits)
    snap = _with_usage(static, usage)
    try:
        _check_root_traits(static, request, known_traits)
        for group in request.groups:
            _check_group(static, snap, group, known_classes, known_traits)
    except _NoCandidates:
        return EMPTY
    candidates = list(search.find_candidates(
        snap, request, max_candidates=max_candidates, strategy=strategy,
        randomize=randomize, rng=rng))
    uuids = search.provider_summary_uuids(
        snap, candidates, nested_aware=request.nested_aware)
    return CandidatesResult(candidates, [_summary(snap, u, static.trait_rank) for u in uuids])


def _summary(snap: Snapshot, uuid: str, trait_rank: Mapping[str, int]) -> ProviderSummary:
    return ProviderSummary(
        uuid=uuid,
        parent_uuid=snap.parent_uuid_of(uuid),
        root_uuid=snap.root_uuid(uuid),
        traits=tuple(sorted(snap.traits_of(uuid),
                            key=lambda name: (trait_rank.get(name, 1 << 62), name))),
        resources=dict(sorted(snap.resources_of(uuid).items())))
