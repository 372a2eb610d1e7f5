"""allotment-api keeps big buffers in glibc's heap (server.malloc)."""

from __future__ import annotations

import platform

import pytest

from allotment.server import malloc


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_the_thresholds_are_set_on_glibc(monkeypatch):
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    assert malloc.keep_big_buffers()


@pytest.mark.parametrize("name, value", [
    ("MALLOC_MMAP_THRESHOLD_", "131072"),
    ("MALLOC_TRIM_THRESHOLD_", "131072"),
    ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072"),
])
def test_what_the_operator_set_is_left_alone(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert not malloc.keep_big_buffers()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_system():
    def resident_kb() -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))

    malloc.give_back()
    # Many small blocks (glibc's heap, below the mmap threshold), all but
    # every eighth then freed: holes of whole pages between blocks still
    # held, which no trim at the top of the heap returns.
    blocks = [bytes(2048 + i % 7) for i in range(40_000)]
    kept = blocks[::8]
    del blocks
    before = resident_kb()
    assert malloc.give_back()
    assert resident_kb() < before - 20_000  # most of the 70 MB freed
    assert len(kept) == 5_000
