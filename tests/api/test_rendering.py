"""What the API keeps of encoded JSON between requests."""

from __future__ import annotations

import sys
import tracemalloc

import orjson

from allotment.api import rendering


def test_a_kept_fragment_is_the_json_it_holds():
    body = {"allocations": {"p": {"resources": {"VCPU": 1}}}, "mappings": {"": ["p"]}}
    assert orjson.loads(orjson.dumps({"x": rendering.fragment(body)})) == {"x": body}


def test_kept_fragments_take_about_their_length_in_memory():
    # orjson's own output keeps a buffer of 4 KB or more per encoding; a
    # cache of thousands of small ones must not.
    body = {"resources": {"VCPU": {"capacity": 64, "used": 3}}, "traits": ["HW_CPU_X86_AVX2"]}
    size = len(orjson.dumps(body))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [rendering.fragment(body) for _ in range(2000)]
        per_fragment = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_fragment < size + sys.getsizeof(b"") + 200, per_fragment


def test_the_current_http_date_follows_the_clock_by_the_second(monkeypatch):
    import datetime
    import time

    clock = [1_795_000_000.2]
    monkeypatch.setattr(time, "time", lambda: clock[0])

    def worded(seconds: float) -> str:
        return rendering.http_date(datetime.datetime.fromtimestamp(int(seconds), datetime.UTC))

    assert rendering.http_date() == worded(clock[0])
    clock[0] += 0.7  # the same second: the same words
    assert rendering.http_date() == worded(clock[0])
    clock[0] += 0.5  # the next second
    assert rendering.http_date() == worded(clock[0]) != worded(clock[0] - 1)
    assert rendering.http_date().endswith(" GMT")
