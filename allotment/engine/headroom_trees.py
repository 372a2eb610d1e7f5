"""What headroom counts keep between one state of a changing snapshot and
the next, so that a scrape of many flavors does again only what changed.

:class:`Trees` is worked out once per state of the snapshot, for every
request: each tree's stamp (the revisions of its providers and of the
sharing providers serving it, as engine.kept stamps them), the trees linked
through sharing providers, each tree's providers in *canonical order* and
its *signature*: its providers in that order with their parent's place,
inventory, usage and traits (and, apart, their aggregates).  The canonical
order follows what the providers are, not their UUIDs, and placement takes
candidates in an order made of the providers' places in it (see
engine.headroom).  So two trees with the same signature answer every
request alike up to their providers' names (their candidates correspond one
to one, in the same order of placement) and fit the same number of
instances, whatever their UUIDs: a request is counted once per signature,
not once per tree.  Trees served by the same sharing providers are alike
when their signatures and aggregates are.

:class:`Counts` is one request's count at one state: each tree's answer and
the sums made of them (per host, in total, per aggregate).  At the next
state only the trees whose stamp changed are counted again and the sums
moved by the difference; trees linked through sharing providers are placed
together again per group of linked trees that holds a changed one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from allotment.engine.snapshot import Snapshot

_VERSIONS = itertools.count(1)
_NONE: frozenset = frozenset()


def _stamp(revs: Sequence[int], members: tuple[int, ...] | None,
           pools: tuple[int, ...] | None, r: int) -> object:
    if members is None and pools is None:
        return revs[r]  # a tree of one provider, no pool: most hosts
    at = revs.__getitem__
    return (tuple(map(at, members or (r,))), tuple(map(at, pools or ())))


def _own(snap: Snapshot, m: int, sorted_forms: dict) -> tuple:
    """What a provider is, but for its place and name: inventory, usage
    (classes with some in use) and traits, each sorted by class or name,
    comparable with another's.  ``sorted_forms`` keeps the sorted forms
    of the trait sets and inventories (both shared between providers)
    already made."""
    u = snap.used.get(snap.uuids[m])
    if u:
        usage = tuple(sorted(u.items()))
        if 0 in u.values():
            usage = tuple(entry for entry in usage if entry[1])
    else:
        usage = ()
    traits = snap.traits[m]
    names = sorted_forms.get(traits)
    if names is None:
        names = sorted_forms[traits] = tuple(sorted(traits))
    inventory = snap.inventory[m]
    if inventory:
        # The shared inventory mappings live as long as the snapshot: their
        # id names them for the time of one build.
        limits = sorted_forms.get(id(inventory))
        if limits is None:
            limits = sorted_forms[id(inventory)] = tuple(sorted(inventory.items()))
    else:
        limits = ()
    return (limits, usage, names)


def canonical(snap: Snapshot, members: tuple[int, ...],
              sorted_forms: dict | None = None) -> tuple[tuple[int, ...], tuple, tuple]:
    """A tree's providers in *canonical order*, its shape in that order and
    its providers' aggregates in that order (see the module docstring).

    The order: the root, then each child's subtree in turn, children taken
    by their subtree's description (inventory, usage, traits, then their
    own children's descriptions), twins by UUID.  It follows what the
    providers are, not their UUIDs, so two trees alike have their providers
    in corresponding places.  The shape lists each provider, in that order,
    as (its parent's place, inventory, usage, traits)."""
    forms = {} if sorted_forms is None else sorted_forms
    if len(members) == 1:
        (r,) = members
        return members, ((-1, *_own(snap, r, forms)),), (snap.aggregates[r],)
    children = snap.children
    labels: dict[int, tuple] = {}
    ranked: dict[int, list[int]] = {}

    def label(m: int) -> None:
        kids = children[m]
        if kids:
            for c in kids:
                label(c)
            # Positions are in UUID order: (label, position) puts twins by UUID.
            order = ranked[m] = sorted(kids, key=lambda c: (labels[c], c))
            below = tuple([labels[c] for c in order])
        else:
            below = ()
        labels[m] = (_own(snap, m, forms), below)

    r = members[0]
    while snap.parent[r] != -1:
        r = snap.parent[r]
    label(r)
    order: list[int] = []
    at: dict[int, int] = {}
    shape = []
    stack = [(r, -1)]
    while stack:
        m, up = stack.pop()
        at[m] = len(order)
        order.append(m)
        shape.append((up, *labels[m][0]))
        kids = ranked.get(m)
        if kids:
            stack.extend((c, at[m]) for c in reversed(kids))
    return tuple(order), tuple(shape), tuple(snap.aggregates[m] for m in order)


class Trees:
    """Everything about the trees that counts of any request need, at one
    state of the snapshot (see the module docstring)."""

    def __init__(self, snap: Snapshot, previous: Trees | None = None) -> None:
        self.snap = snap
        self.version = next(_VERSIONS)
        revs = snap.position_revisions()
        # None: a snapshot that never changes; nothing is compared or kept.
        self.revs = None if revs is None else list(revs)
        self.roots = list(snap.roots)
        if previous is not None and (previous.snap is not snap or revs is None):
            previous = None
        # Roots whose stamp changed since ``previous`` (None: not known).
        self.changed: set[int] | None = None
        self.after = previous.version if previous is not None else None
        many, served = snap.trees_of_many().get, snap.sharing_by_anchor.get
        self.stamps: dict[int, object] = {}
        if revs is not None:
            self.stamps = {r: _stamp(revs, many(r), served(r), r) for r in self.roots}
        sharing_roots = {snap.root[s] for s in snap.sharing}
        # Roots whose tree holds a sharing provider or is served by one.
        self.shares = frozenset(sharing_roots.union(snap.sharing_by_anchor))
        # Roots whose tree holds a sharing provider.
        self.holding = frozenset(sharing_roots)
        self.component_of = self._components(sharing_roots)
        # Root -> (shape, aggregates), both in canonical order (see
        # canonical), for every tree.
        self.signatures: dict[int, tuple[tuple, tuple]] = {}
        # Root -> its providers in canonical order, for trees of several.
        self.orders: dict[int, tuple[int, ...]] = {}
        self.aggregates: dict[int, frozenset[str]] = {}
        todo: Sequence[int] = self.roots
        if previous is not None:
            old = previous.stamps
            new = self.stamps
            self.changed = {r for r, s in new.items() if old.get(r) != s}
            self.changed.update(r for r in old if r not in new)
            kept = [r for r in previous.signatures if r in new and r not in self.changed]
            self.signatures = {r: previous.signatures[r] for r in kept}
            self.aggregates = {r: previous.aggregates[r] for r in kept}
            self.orders = {r: previous.orders[r] for r in kept if r in previous.orders}
            todo = [r for r in self.roots if r not in self.signatures]
        aggregates = snap.aggregates
        sorted_forms: dict = {}
        for r in todo:
            members = many(r)
            if members is None:
                self.signatures[r] = canonical(snap, (r,), sorted_forms)[1:]
                self.aggregates[r] = aggregates[r]
            else:
                order, shape, aggs = canonical(snap, members, sorted_forms)
                self.orders[r] = order
                self.signatures[r] = (shape, aggs)
                self.aggregates[r] = frozenset().union(*aggs)
        self._classes: dict[bool, dict[object, list[int]]] = {}
        self._places: dict[int, int] | None = None
        self._largest: dict[str, int] | None = None

    @property
    def places(self) -> dict[int, int]:
        """Provider -> its place in its tree's canonical order (0, the
        root's, is left out)."""
        if self._places is None:
            self._places = {m: k for order in self.orders.values()
                            for k, m in enumerate(order) if k}
        return self._places

    def classes(self, with_aggregates: bool) -> dict[object, list[int]]:
        """The trees alike, by their signature: for trees no sharing
        provider is in or serves, the shape (and the aggregates,
        ``with_aggregates``); for trees served by sharing providers, the
        shape, the aggregates and the sharing providers that serve them.
        Trees holding a sharing provider are left out (each is its own)."""
        found = self._classes.get(with_aggregates)
        if found is None:
            found = self._classes[with_aggregates] = {}
            for r in self.roots:
                if r in self.holding:
                    continue
                shape, aggs = self.signatures[r]
                if r in self.shares:
                    key: object = self.served_key(r)
                elif with_aggregates:
                    key = (shape, aggs)
                else:
                    key = shape
                found.setdefault(key, []).append(r)
        return found

    def served_key(self, r: int) -> tuple:
        """What makes trees served by sharing providers alike: their
        signature and aggregates, and the sharing providers serving them."""
        return (*self.signatures[r], self.snap.sharing_by_anchor[r])

    def unchanged(self, snap: Snapshot) -> bool:
        """Whether ``snap`` is still in the state these trees were worked out at."""
        revs = snap.position_revisions()
        return (snap is self.snap and revs is not None and revs == self.revs
                and snap.roots == self.roots)

    def _components(self, sharing_roots: set[int]) -> dict[int, tuple[int, ...]]:
        """Root -> the trees linked with it through sharing providers (for
        the roots in ``shares``).  Trees in different groups use no
        provider in common, so placing them together is placing each group
        on its own."""
        snap = self.snap
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        sharing_in: dict[int, list[int]] = {}
        for s in snap.sharing:
            sharing_in.setdefault(snap.root[s], []).append(s)
        served = snap.sharing_by_anchor
        for r in self.shares:
            find(r)
            # Sharing providers (as negative nodes) join the trees they serve
            # and the tree they are in.
            for s in (*served.get(r, ()), *sharing_in.get(r, ())):
                parent[find(r)] = find(-1 - s)
        groups: dict[int, list[int]] = {}
        for r in self.shares:
            groups.setdefault(find(r), []).append(r)
        out = {}
        for members in groups.values():
            key = tuple(sorted(members))
            for r in members:
                out[r] = key
        return out

    def largest(self, work: Callable[[Snapshot], dict[str, int]]) -> dict[str, int]:
        if self._largest is None:
            self._largest = work(self.snap)
        return dict(self._largest)


@dataclass(slots=True)
class Answer:
    """One tree's count for one request."""

    uuid: str
    count: int
    aggregates: frozenset[str]
    shares: bool
    # The candidates (as totals) of a tree linked through sharing providers,
    # placed again with the others of its group.
    found: list | None
