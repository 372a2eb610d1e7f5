"""The pages a set of processes maps, each counted once."""

from __future__ import annotations

import os

from benchmarks.side_by_side.measure import distinct_mb, memory_mb


def test_a_page_mapped_twice_counts_once():
    once = distinct_mb([os.getpid()])
    if once is None:  # page frames hidden from this process
        return
    # Read at different moments (and this process grows as it reads), so
    # a little apart; twice the pages if each mapping counted.
    assert distinct_mb([os.getpid(), os.getpid()]) < 1.2 * once
    rss = memory_mb(os.getpid())[0]
    assert 0.5 * rss < once < 1.5 * rss
