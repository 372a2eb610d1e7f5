"""An immutable picture of every provider, built once and searched many times.

The allocation-candidate search never touches the database: storage loads
providers, inventories (with usage), traits and aggregates into
:class:`ProviderRecord` objects and calls :meth:`Snapshot.build`.  Everything
the search needs to avoid scanning the whole world per request (trees,
children, providers per resource class, sharing providers and the trees they
serve) is indexed here, once, so a snapshot can be cached and reused by many
requests.

Providers are addressed internally by their position in ``Snapshot.providers``
(sorted by UUID), which keeps the search's inner loops on small integers and
makes results independent of the order storage happened to load rows in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# A provider with this trait shares its inventory with every tree that has a
# provider in one of its aggregates.
SHARES_TRAIT = "MISC_SHARES_VIA_AGGREGATE"

# Placement's default max_unit for an inventory (a signed 32-bit integer).
MAX_UNIT_DEFAULT = 2147483647


@dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class on one provider, including what is already used."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_UNIT_DEFAULT
    step_size: int = 1
    allocation_ratio: float = 1.0
    used: int = 0
    # Placement truncates the overcommitted capacity to an integer when it
    # reports it; amounts are integers so the comparison is unaffected.
    capacity: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "capacity",
            int((self.total - self.reserved) * self.allocation_ratio))

    def fits(self, amount: int) -> bool:
        """Whether a single request of ``amount`` may be placed here."""
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )


@dataclass(frozen=True, slots=True)
class ProviderRecord:
    """What storage knows about one resource provider."""

    uuid: str
    name: str = ""
    generation: int = 0
    parent_uuid: str | None = None
    # Optional: derived from the parent chain when omitted, checked when given.
    root_uuid: str | None = None
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


class Snapshot:
    """Providers plus the indexes the candidate search relies on.

    Build with :meth:`build`; treat every attribute as read-only.
    """

    __slots__ = (
        "agg_members",
        "anchors_of_sharing",
        "by_rc",
        "children",
        "depth",
        "has_nested",
        "index",
        "is_sharing",
        "parent",
        "providers",
        "root",
        "roots",
        "sharing",
        "sharing_by_anchor",
        "symmetry_key",
        "tree_rc",
        "trees",
    )

    providers: tuple[ProviderRecord, ...]
    index: Mapping[str, int]
    parent: tuple[int, ...]            # -1 for roots
    root: tuple[int, ...]
    depth: tuple[int, ...]
    children: tuple[tuple[int, ...], ...]
    is_sharing: tuple[bool, ...]
    roots: tuple[int, ...]
    trees: Mapping[int, tuple[int, ...]]                   # root -> members
    tree_rc: Mapping[int, Mapping[str, tuple[int, ...]]]   # root -> rc -> members
    by_rc: Mapping[str, tuple[int, ...]]
    sharing: tuple[int, ...]
    agg_members: Mapping[str, tuple[int, ...]]
    anchors_of_sharing: Mapping[int, frozenset[int]]
    sharing_by_anchor: Mapping[int, tuple[int, ...]]
    has_nested: bool
    symmetry_key: tuple[object, ...]

    @classmethod
    def build(cls, records: Iterable[ProviderRecord]) -> Snapshot:
        providers = tuple(sorted(records, key=lambda r: r.uuid))
        index: dict[str, int] = {}
        for i, rec in enumerate(providers):
            if rec.uuid in index:
                raise ValueError(f"duplicate provider uuid {rec.uuid}")
            index[rec.uuid] = i
        n = len(providers)

        parent = [-1] * n
        for i, rec in enumerate(providers):
            if rec.parent_uuid is not None:
                if rec.parent_uuid not in index:
                    raise ValueError(
                        f"provider {rec.uuid} has unknown parent "
                        f"{rec.parent_uuid}")
                parent[i] = index[rec.parent_uuid]

        root = [-1] * n
        depth = [0] * n
        for i in range(n):
            # Walk up until a provider whose root is known; the path length
            # bound turns a parent cycle into an error instead of a hang.
            path = []
            j = i
            while root[j] == -1 and parent[j] != -1:
                path.append(j)
                j = parent[j]
                if len(path) > n:
                    raise ValueError("provider parent cycle detected")
            if root[j] == -1:
                root[j], depth[j] = j, 0
            for k in reversed(path):
                root[k] = root[parent[k]]
                depth[k] = depth[parent[k]] + 1
        for i, rec in enumerate(providers):
            if rec.root_uuid is not None and rec.root_uuid != providers[root[i]].uuid:
                raise ValueError(
                    f"provider {rec.uuid} claims root {rec.root_uuid} but "
                    f"its parent chain ends at {providers[root[i]].uuid}")

        children: list[list[int]] = [[] for _ in range(n)]
        trees: dict[int, list[int]] = {}
        tree_rc: dict[int, dict[str, list[int]]] = {}
        by_rc: dict[str, list[int]] = {}
        agg_members: dict[str, list[int]] = {}
        for i, rec in enumerate(providers):
            if parent[i] != -1:
                children[parent[i]].append(i)
            trees.setdefault(root[i], []).append(i)
            per_rc = tree_rc.setdefault(root[i], {})
            for rc in rec.inventories:
                per_rc.setdefault(rc, []).append(i)
                by_rc.setdefault(rc, []).append(i)
            for agg in rec.aggregates:
                agg_members.setdefault(agg, []).append(i)

        is_sharing = tuple(SHARES_TRAIT in rec.traits for rec in providers)
        sharing = tuple(i for i in range(n) if is_sharing[i])
        # A sharing provider serves (is "anchored" by) the tree of every
        # provider that shares one of its aggregates, itself included.
        anchors_of_sharing: dict[int, frozenset[int]] = {}
        sharing_by_anchor: dict[int, list[int]] = {}
        for s in sharing:
            anchors = frozenset(
                root[q]
                for agg in providers[s].aggregates
                for q in agg_members[agg])
            anchors_of_sharing[s] = anchors
            for r in sorted(anchors):
                if r != root[s]:
                    sharing_by_anchor.setdefault(r, []).append(s)

        symmetry_key: list[object] = []
        for i, rec in enumerate(providers):
            # Two non-root leaves under the same parent with identical
            # inventories, usage, traits and aggregates can be swapped without
            # changing whether any request can be satisfied; the search uses
            # this to avoid re-exploring dead ends once per such twin.
            if parent[i] == -1 or children[i]:
                symmetry_key.append(None)
            else:
                symmetry_key.append((
                    parent[i],
                    tuple(sorted(rec.inventories.items())),
                    rec.traits,
                    rec.aggregates,
                ))

        self = cls.__new__(cls)
        self.providers = providers
        self.index = MappingProxyType(index)
        self.parent = tuple(parent)
        self.root = tuple(root)
        self.depth = tuple(depth)
        self.children = tuple(tuple(c) for c in children)
        self.is_sharing = is_sharing
        self.roots = tuple(i for i in range(n) if parent[i] == -1)
        self.trees = MappingProxyType({r: tuple(m) for r, m in trees.items()})
        self.tree_rc = MappingProxyType({
            r: MappingProxyType({rc: tuple(m) for rc, m in per.items()})
            for r, per in tree_rc.items()})
        self.by_rc = MappingProxyType({rc: tuple(m) for rc, m in by_rc.items()})
        self.sharing = sharing
        self.agg_members = MappingProxyType(
            {a: tuple(m) for a, m in agg_members.items()})
        self.anchors_of_sharing = MappingProxyType(anchors_of_sharing)
        self.sharing_by_anchor = MappingProxyType(
            {r: tuple(s) for r, s in sharing_by_anchor.items()})
        self.has_nested = any(p != -1 for p in parent)
        self.symmetry_key = tuple(symmetry_key)
        return self

    def __len__(self) -> int:
        return len(self.providers)

    def get(self, uuid: str) -> ProviderRecord | None:
        i = self.index.get(uuid)
        return None if i is None else self.providers[i]

    def root_uuid(self, uuid: str) -> str:
        return self.providers[self.root[self.index[uuid]]].uuid

    def tree_uuids(self, uuid: str) -> tuple[str, ...]:
        """UUIDs of every provider in the tree containing ``uuid``."""
        r = self.root[self.index[uuid]]
        return tuple(self.providers[i].uuid for i in self.trees[r])

    def is_ancestor_or_self(self, ancestor: int, node: int) -> bool:
        if self.root[ancestor] != self.root[node]:
            return False
        while self.depth[node] > self.depth[ancestor]:
            node = self.parent[node]
        return node == ancestor
