"""A live snapshot's contents, handed out whole and taken back (what
``world.compaction`` makes again): every slot but the kept answers and
the touch log, which refer to the snapshot itself."""

from __future__ import annotations

from allotment.engine.live import LiveSnapshot
from allotment.engine.snapshot import Snapshot

_HELD = tuple(name for name in (*Snapshot.__slots__, *LiveSnapshot.__slots__)
              if name not in ("_kept", "_log"))


def take(snap: LiveSnapshot) -> list:
    """Everything ``snap`` holds, as a list :func:`put` gives back; the
    snapshot holds none of it in between."""
    held = [getattr(snap, name) for name in _HELD]
    for name in _HELD:
        setattr(snap, name, None)
    return held


def put(snap: LiveSnapshot, held: list) -> None:
    for name, value in zip(_HELD, held, strict=True):
        setattr(snap, name, value)
