"""Reading what the CPU benchmarks print."""

from __future__ import annotations

import re


def kinds_with_medians(lines: list[str]) -> list[str]:
    """The kinds of the ``  KIND  MEDIAN / MEAN`` lines, each checked to
    carry two positive numbers."""
    kinds = []
    for line in lines:
        m = re.fullmatch(r"  (\S+(?: \S+)?) +(\d+) / +(\d+)", line)
        assert m, line
        kinds.append(m.group(1))
        assert int(m.group(2)) > 0 and int(m.group(3)) > 0
    return kinds
