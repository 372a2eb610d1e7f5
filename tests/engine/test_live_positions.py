"""A live snapshot holds one int object per position: its indexes share the
index's ints instead of keeping equal ones of their own (at 10,000 NUMA
hosts about 200,000 of them, 32 bytes each, as long as the world lives)."""

from __future__ import annotations

from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from tests.harness.positions import indexes_share_positions

INV = Inventory(1000, 0, 1, 1000, 1, 1.0)


def _records() -> list[ProviderRecord]:
    records = []
    for h in range(300):
        root = f"{h:04d}-root"
        records.append(ProviderRecord(root, name=root, inventories={"DISK_GB": INV}))
        for n in range(2):
            records.append(ProviderRecord(f"{h:04d}-numa{n}", name=f"{h}-numa{n}",
                                          parent_uuid=root, inventories={"VCPU": INV}))
    return records


def test_indexes_share_the_index_positions():
    snap = LiveSnapshot.build(_records())
    assert indexes_share_positions(snap)
    assert sorted(snap.by_rc["VCPU"]) == [i for i, u in enumerate(snap.uuids) if "numa" in u]
