"""Whether a live snapshot's indexes hold the index's own int objects for
positions (one object per position), as engine.live keeps them."""

from __future__ import annotations

from allotment.engine.live import LiveSnapshot


def indexes_share_positions(snap: LiveSnapshot) -> bool:
    """Roots, tree members and each class's members are the very int
    objects ``snap.index`` holds."""
    canonical = {i: i for i in snap.index.values()}

    def shared(values) -> bool:
        return all(v is canonical[v] for v in values)

    return (shared(snap.root) and shared(snap.roots)
            and all(shared((r, *m)) for r, m in snap.trees_of_many().items())
            and all(shared(m) for m in snap.by_rc.values()))
