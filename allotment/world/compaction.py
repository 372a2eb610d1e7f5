"""Make a loaded world's objects again, next to each other.

Reading the world makes several short-lived objects (rows, records, the
lists a snapshot is built from) for every object it keeps, and the kept
ones end up scattered among them.  Python's allocator gives a 1 MB arena
back only when nothing in it lives, and never gives back the pages of a
free pool inside an arena still in use: at 10,000 NUMA hosts a process
held 104 MB more after reading its world, about half of it free space.
allotment-api's main process reads the world before it forks its
workers, so every worker maps all of it.

:func:`remade` copies the kept objects through ``pickle`` once the load's
short-lived ones are gone: the copies are made one after the other, into
as few arenas as they fill, and the arenas the originals were scattered
over are freed with them (48 MB more than before the world was read,
instead of 104 MB, measured).
Objects shared by several structures stay shared (pickle's memo), and
so do ints, which pickle would otherwise make once per occurrence (the
snapshot's indexes share one int object per position, see engine.live).
"""

from __future__ import annotations

import gc
import io
import pickle
from collections.abc import Sequence
from typing import Any


class _Writer(pickle.Pickler):
    def persistent_id(self, obj: object) -> int | None:
        # Written as references so that the reader makes each value once
        # (pickle's memo leaves ints out).
        return obj if type(obj) is int else None


class _Ints(dict):
    """Each int value as one object: the first one asked for."""

    def __missing__(self, value: int) -> int:
        self[value] = value
        return value


class _Reader(pickle.Unpickler):
    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        # A C-level lookup for every int read, Python only for new values.
        self.persistent_load = _Ints().__getitem__


def remade(parts: list[Sequence[Any]]) -> list[Sequence[Any]]:
    """Copies of ``parts``, made contiguous; ``parts`` is emptied, and the
    caller must hold no other reference to what it held (otherwise the
    originals live on beside their copies).

    What ``parts`` holds must be picklable; identity among the objects it
    holds is kept, identity with anything outside it is not.
    """
    enabled = gc.isenabled()
    # Nothing made here is garbage until the end; a collection in between
    # would walk every container made so far, again and again.
    gc.disable()
    try:
        buffer = io.BytesIO()
        _Writer(buffer, pickle.HIGHEST_PROTOCOL).dump(parts)
        parts.clear()
        # The originals go before the copies are made: the arenas they were
        # scattered over empty and are given back, and the copies fill the
        # fullest arenas left first (Python's allocator's own order).
        gc.collect()
        buffer.seek(0)
        copies = _Reader(buffer).load()
        del buffer
        return copies
    finally:
        if enabled:
            gc.enable()
