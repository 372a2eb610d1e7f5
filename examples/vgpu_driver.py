"""An example driver: a host whose vGPUs move from its root to one child
provider per physical GPU, taking live allocations with them.

Version 1 of the driver ("flat") reports every vGPU of the host as VGPU
inventory on the compute node's root provider.  Version 2 ("nested") models
each physical GPU as a child provider with its own VGPU inventory, so the
scheduler can tell GPUs apart.  Upgrading a busy host from 1 to 2 needs a
reshape: the VGPU inventory *and* the instances' VGPU allocations move from
the root to the GPU children in one atomic step.

Run against a service (or ``--database-url`` for in-process access)::

    python examples/vgpu_driver.py --url http://127.0.0.1:8778 --token admin \\
        --roles admin,service \\
        --host compute1 --gpu 0000:81:00.0=4 --gpu 0000:82:00.0=4 --nested
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid as uuidlib
from collections.abc import Callable, Mapping

from allotment.client import (
    PlacementClient,
    ProviderTree,
    ReshapeNeeded,
    TreeUpdater,
)
from allotment.server.in_process import PlacementDirect

VGPU = "VGPU"
GPU_TRAIT = "CUSTOM_PHYSICAL_GPU"
_NAMESPACE = uuidlib.UUID("6b0d1f0e-6c1b-4f8e-9a59-3f3c7c1d2a10")


class CannotPlaceVGPUs(RuntimeError):
    """The existing vGPU allocations do not fit the physical GPUs."""


class VGPUHostDriver:
    """Describes one host's provider tree.

    ``gpus`` maps each physical GPU's PCI address to the number of vGPUs it
    offers.  ``nested`` selects the layout.  ``locate`` tells, for a consumer,
    on which GPU its vGPUs really live (a real driver would look at its
    mediated devices); without it, vGPUs are packed first-fit.
    """

    def __init__(
        self,
        hostname: str,
        gpus: Mapping[str, int],
        *,
        nested: bool = False,
        vcpus: int = 32,
        memory_mb: int = 131072,
        locate: Callable[[str], str | None] | None = None,
    ) -> None:
        self.hostname = hostname
        self.gpus = dict(gpus)
        self.nested = nested
        self.vcpus = vcpus
        self.memory_mb = memory_mb
        self.locate = locate

    def gpu_name(self, pci: str) -> str:
        return f"{self.hostname}_gpu_{pci}"

    def gpu_uuid(self, pci: str) -> str:
        # Stable across restarts, so a retried reshape finds the same children.
        return str(uuidlib.uuid5(_NAMESPACE, self.gpu_name(pci)))

    def _base_inventory(self) -> dict[str, dict]:
        return {"VCPU": {"total": self.vcpus, "allocation_ratio": 4.0},
                "MEMORY_MB": {"total": self.memory_mb, "reserved": 512}}

    def update_provider_tree(self, tree: ProviderTree,
                             allocations: dict[str, dict] | None = None) -> None:
        root = tree.data(self.hostname).uuid
        if not self.nested:
            inventory = self._base_inventory()
            if self.gpus:
                inventory[VGPU] = {"total": sum(self.gpus.values()),
                                   "max_unit": max(self.gpus.values())}
            tree.update_inventory(root, inventory)
            return

        # vGPUs still on the root may be in use: only a reshape can move them.
        if VGPU in tree.data(root).inventory and allocations is None:
            raise ReshapeNeeded(f"{self.hostname}: VGPU moves to per-GPU providers")

        for pci, count in sorted(self.gpus.items()):
            name = self.gpu_name(pci)
            if not tree.exists(name):
                tree.new_child(name, root, uuid=self.gpu_uuid(pci))
            tree.update_inventory(name, {VGPU: {"total": count, "max_unit": count}})
            tree.update_traits(name, {GPU_TRAIT})
        tree.update_inventory(root, self._base_inventory())
        if allocations is not None:
            self._move_allocations(tree, root, allocations)

    def _move_allocations(self, tree: ProviderTree, root: str,
                          allocations: dict[str, dict]) -> None:
        """Edit ``allocations`` in place: VGPU amounts on the root go to GPUs."""
        children = {pci: tree.data(self.gpu_name(pci)).uuid for pci in sorted(self.gpus)}
        free = dict(self.gpus)
        for record in allocations.values():
            for pci, child in children.items():
                used = record["allocations"].get(child, {}).get("resources", {}).get(VGPU, 0)
                free[pci] -= used
        def vgpus_on_root(consumer: str) -> int:
            by_rp = allocations[consumer]["allocations"]
            return by_rp.get(root, {}).get("resources", {}).get(VGPU, 0)

        # Without ``locate``: largest first, each onto the GPU with the most
        # room left.  A heuristic; a real driver knows where each vGPU lives.
        for consumer in sorted(allocations, key=lambda c: (-vgpus_on_root(c), c)):
            by_rp = allocations[consumer]["allocations"]
            on_root = by_rp.get(root, {}).get("resources", {})
            amount = on_root.pop(VGPU, 0)
            if not amount:
                continue
            if not on_root:
                del by_rp[root]
            wanted = self.locate(consumer) if self.locate else None
            roomiest = max(children, key=lambda p: (free[p], p)) if children else None
            pci = wanted or roomiest
            if pci is None or free[pci] < amount:
                raise CannotPlaceVGPUs(f"{amount} VGPU of {consumer} fit on no GPU")
            free[pci] -= amount
            entry = by_rp.setdefault(children[pci], {"resources": {}})
            entry["resources"][VGPU] = entry["resources"].get(VGPU, 0) + amount


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="Placement endpoint")
    where.add_argument("--database-url", help="use the database directly (service down)")
    parser.add_argument("--token", default="admin")
    parser.add_argument("--roles", help="X-Roles to send (noauth2 services only), "
                        "e.g. admin,service: reshaping needs the service role")
    parser.add_argument("--host", required=True)
    parser.add_argument("--gpu", action="append", default=[], metavar="PCI=VGPUS")
    parser.add_argument("--nested", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    gpus = {pci: int(n) for pci, n in (g.split("=", 1) for g in args.gpu)}
    driver = VGPUHostDriver(args.host, gpus, nested=args.nested)

    def run(client: PlacementClient) -> bool:
        return TreeUpdater(client, driver, args.host).run(startup=True)

    if args.url:
        headers = {"X-Roles": args.roles} if args.roles else None
        with PlacementClient.from_url(args.url, token=args.token, headers=headers) as client:
            reshaped = run(client)
    else:
        with PlacementDirect(database_url=args.database_url) as client:
            reshaped = run(client)
    print("reshaped" if reshaped else "in step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
