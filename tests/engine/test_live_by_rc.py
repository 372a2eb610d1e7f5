"""A live snapshot keeps the providers of each resource class as a list in
position order (8 bytes a member, where a set took 16 to 32), kept so as
trees come and go."""

from __future__ import annotations

import sys

from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord

INV = Inventory(1000, 0, 1, 1000, 1, 1.0)


def _host(h: int, numa: int = 2) -> list[ProviderRecord]:
    root = f"{h:04d}-root"
    return [ProviderRecord(root, name=root, inventories={"DISK_GB": INV}),
            *(ProviderRecord(f"{h:04d}-numa{n}", name=f"{h}-numa{n}", parent_uuid=root,
                             inventories={"VCPU": INV, "MEMORY_MB": INV})
              for n in range(numa))]


def _expected(snap: LiveSnapshot) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for i in sorted(snap.index.values()):
        for rc in snap.inventory[i]:
            grouped.setdefault(rc, []).append(i)
    return grouped


def test_members_of_a_class_are_a_list_in_position_order():
    snap = LiveSnapshot.build([rec for h in range(500) for rec in _host(h)])
    assert {rc: type(m) for rc, m in snap.by_rc.items()} == dict.fromkeys(
        ("DISK_GB", "VCPU", "MEMORY_MB"), list)
    assert snap.by_rc == _expected(snap)
    vcpu = snap.by_rc["VCPU"]
    assert sys.getsizeof(vcpu) < 9 * len(vcpu) + 100


def test_members_stay_in_position_order_as_trees_change():
    snap = LiveSnapshot.build([rec for h in range(50) for rec in _host(h)])
    # Hosts go (their positions become holes), others come and take them,
    # one host loses a NUMA node and one gets a third.
    snap.replace_trees([f"{h:04d}-root" for h in range(0, 50, 7)], [])
    snap.replace_trees([], [rec for h in range(50, 60) for rec in _host(h)])
    snap.replace_trees(["0003-root"], _host(3, numa=1))
    snap.replace_trees(["0004-root"], _host(4, numa=3))
    disk_only = ProviderRecord("0005-numa0", name="5-numa0", parent_uuid="0005-root",
                               inventories={"DISK_GB": INV})
    snap.replace_trees(["0005-root"], [_host(5)[0], disk_only, _host(5)[2]])
    assert snap.by_rc == _expected(snap)
    fresh = LiveSnapshot.build(snap.providers)
    assert ({rc: sorted(snap.uuids[i] for i in m) for rc, m in snap.by_rc.items()}
            == {rc: sorted(fresh.uuids[i] for i in m) for rc, m in fresh.by_rc.items()})
