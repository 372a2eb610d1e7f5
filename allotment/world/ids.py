"""Provider id -> UUID, held in a list indexed by the id.

The database gives provider ids from one counter, so the ids a world holds
are mostly dense: a list with a slot per id up to the highest holds them in
8 bytes each, where a dict took about 55 (at 10,000 NUMA hosts, 90,000
providers: 0.7 MB against 5.0 MB, in every serving process).  Ids far past
the list's end (a database whose counter ran far ahead of what it still
holds, after much churn) go to a dict beside it, so that the list never
grows to many times the number of providers.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

# The list grows to an id only while that keeps it within this many slots
# per id held (plus a little, for small worlds).
_SLOTS_PER_ID = 2
_SLACK = 1024


class UuidsById(MutableMapping[int, str]):
    """A ``dict[int, str]`` of provider ids to UUIDs, in less memory."""

    __slots__ = ("_count", "_far", "_near")

    def __init__(self) -> None:
        # _near[id] is the UUID of ``id``, or None; ids past it are in _far.
        self._near: list[str | None] = []
        self._far: dict[int, str] = {}
        self._count = 0

    def get(self, pid: int, default: str | None = None) -> str | None:  # type: ignore[override]
        # The one read every feed entry and usage row makes: no exception.
        if 0 <= pid < len(self._near):
            found = self._near[pid]
            return default if found is None else found
        return self._far.get(pid, default)

    def __getitem__(self, pid: int) -> str:
        found = self.get(pid)
        if found is None:
            raise KeyError(pid)
        return found

    def __contains__(self, pid: object) -> bool:
        return type(pid) is int and self.get(pid) is not None

    def __setitem__(self, pid: int, uuid: str) -> None:
        near = self._near
        if 0 <= pid < len(near):
            if near[pid] is None:
                self._count += 1
            near[pid] = uuid
            return
        if 0 <= pid < _SLOTS_PER_ID * (self._count + 1) + _SLACK:
            start = len(near)
            near.extend([None] * (pid + 1 - start))
            # Ids put in _far while the list was shorter move into the
            # slots it now has for them: an id is in one place only.
            for moved in [f for f in self._far if start <= f <= pid]:
                near[moved] = self._far.pop(moved)
            if near[pid] is None:
                self._count += 1
            near[pid] = uuid
            return
        if pid not in self._far:
            self._count += 1
        self._far[pid] = uuid

    def __delitem__(self, pid: int) -> None:
        if 0 <= pid < len(self._near) and self._near[pid] is not None:
            self._near[pid] = None
        else:
            del self._far[pid]
        self._count -= 1

    def __iter__(self) -> Iterator[int]:
        yield from (pid for pid, uuid in enumerate(self._near) if uuid is not None)
        yield from self._far

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"
