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
