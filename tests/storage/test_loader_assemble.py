"""What a load keeps per provider: no set of its own for a provider with no
traits or aggregates (a whole world's worth of them was most of what a full
load made and threw away)."""

from __future__ import annotations

from allotment.storage.loader import _assemble

PROVIDERS = [
    (1, "u-root", "root", 3, None, None, 1, None, None),
    (2, "u-child", "child", 1, "u-root", "u-root", 1, None, None),
    (3, "u-bare", "bare", 0, None, None, 3, None, None),
]


def test_traits_and_aggregates_of_those_that_have_them():
    world = _assemble(PROVIDERS,
                      [(1, "VCPU", 8, 0, 1, 8, 1, 16.0),
                       (2, "MEMORY_MB", 1024, 0, 1, 1024, 1, 1.0)],
                      [(1, "HW_CPU_X86_AVX2"), (1, "CUSTOM_A"), (2, "CUSTOM_B")],
                      [(2, "agg-1")])
    assert world[1].traits == {"HW_CPU_X86_AVX2", "CUSTOM_A"}
    assert world[2].traits == {"CUSTOM_B"}
    assert world[2].aggregates == {"agg-1"}
    assert world[1].inventories == {"VCPU": (8, 0, 1, 8, 1, 16.0)}
    assert world[2][:8] == ("u-child", "child", 1, "u-root", "u-root", 1, None, None)


def test_no_set_of_its_own_without_traits_or_aggregates():
    world = _assemble(PROVIDERS, [], [(1, "CUSTOM_A")], [])
    assert world[3].traits == set() and world[3].aggregates == set()
    assert world[3].traits is world[2].traits is world[1].aggregates
