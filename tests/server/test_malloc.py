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
