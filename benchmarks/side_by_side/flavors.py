"""The worlds and flavors of the scheduling mix: what nova's scheduler asks.

The flat and NUMA worlds of :mod:`worlds`, with what a real cloud adds to
them: every 50th compute host disabled (the ``COMPUTE_STATUS_DISABLED``
trait nova puts on the root), and CPU traits spread over the roots so that
a ``required`` and an ``in:`` flavor each match a part of the hosts.  Every
request carries ``root_required=!COMPUTE_STATUS_DISABLED`` and
``limit=1000`` (nova's ``max_placement_results``), as nova sends them.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.side_by_side import worlds
from benchmarks.side_by_side.worlds import World

NOVA_SUFFIX = "&root_required=!COMPUTE_STATUS_DISABLED&limit=1000"
DISABLED_EVERY = 50


@dataclass(frozen=True)
class Flavor:
    name: str
    query: str  # the candidates query, without nova's suffix

    @property
    def path(self) -> str:
        return "/allocation_candidates?" + self.query + NOVA_SUFFIX


def _general(name: str, vcpu: int, mem: int, disk: int) -> Flavor:
    return Flavor(name, f"resources=VCPU:{vcpu},MEMORY_MB:{mem},DISK_GB:{disk}")


_SMALL = "resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20"

_COMMON = (
    _general("tiny", 1, 512, 1),
    _general("small", 1, 2048, 20),
    _general("medium", 2, 4096, 40),
    _general("large", 4, 8192, 80),
    Flavor("required trait", _SMALL + "&required=HW_CPU_X86_AVX2"),
    Flavor("in: trait", _SMALL + "&required=in:HW_CPU_X86_SSE42,HW_CPU_X86_AVX2"),
)

FLAVORS: dict[str, tuple[Flavor, ...]] = {
    "flat": (*_COMMON,
             _general("xlarge", 8, 16384, 160),
             Flavor("forbidden trait", _SMALL + "&required=!HW_CPU_X86_AVX2")),
    "numa": (_COMMON[0], _COMMON[1], _COMMON[2], _COMMON[4], _COMMON[5],
             Flavor("single NUMA node",
                    "resources=DISK_GB:20&resources_NUMA=VCPU:4,MEMORY_MB:8192"),
             Flavor("SR-IOV",
                    "resources=DISK_GB:10&resources_COMPUTE=VCPU:2,MEMORY_MB:2048"
                    "&resources_NET=SRIOV_NET_VF:1&required_NET=CUSTOM_PHYSNET0"
                    "&same_subtree=_COMPUTE,_NET&group_policy=none"),
             Flavor("VGPU", "resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20"
                            "&resources_GPU=VGPU:1&group_policy=none")),
}


def world(shape: str, hosts: int) -> World:
    """The ``shape`` world of ``hosts`` hosts, dressed as a cloud nova schedules to."""
    if shape not in FLAVORS:
        raise ValueError(f"no scheduling mix for the {shape} world")
    built = worlds.SHAPES[shape](hosts)
    for h, tree in enumerate(built.trees):
        root = tree[0]
        extra = []
        if h % DISABLED_EVERY == DISABLED_EVERY - 1:
            extra.append("COMPUTE_STATUS_DISABLED")
        if h % 2 and "HW_CPU_X86_AVX2" not in root.traits:
            extra.append("HW_CPU_X86_AVX2")
        if h % 3 == 0:
            extra.append("HW_CPU_X86_SSE42")
        root.traits = [*root.traits, *extra]
    return built
