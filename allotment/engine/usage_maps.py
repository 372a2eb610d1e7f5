"""Providers of equal usage holding one map of it.

A cloud's hosts often hold alike (the same flavors): at 10,000 NUMA hosts
with ten instances each, the 30,000 maps of usage a world held were two
values, about 6 MB in every serving process, on pages that answers, reading
them, copied from the process that forked them.  A snapshot never changes a
usage map in place (``LiveSnapshot.add_usage`` changes a copy), so sharing
them changes nothing read.
"""

from __future__ import annotations


def share_equal(used: dict[str, dict[str, int]]) -> None:
    """Make the providers of ``used`` whose usage is equal (the same classes
    in the same order, the same amounts) hold one map of it."""
    seen: dict[tuple, dict[str, int]] = {}
    for uuid, per_rc in used.items():
        used[uuid] = seen.setdefault(tuple(per_rc.items()), per_rc)
