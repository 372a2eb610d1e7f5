"""ProviderTree: structure, lookups, change checks, copies, threads."""

from __future__ import annotations

import copy
import threading

import pytest

from allotment.client import ProviderTree


@pytest.fixture
def tree() -> ProviderTree:
    t = ProviderTree()
    t.new_root("host", "r", generation=3)
    t.new_child("host_numa0", "host", "n0", generation=1)
    t.new_child("host_numa1", "r", "n1", generation=1)
    t.new_child("host_numa0_gpu0", "n0", "g0")
    t.new_root("shared", "s", generation=7)
    return t


def test_structure_and_lookup(tree):
    assert tree.get_provider_uuids() == ["r", "n0", "g0", "n1", "s"]
    assert tree.get_provider_uuids("n0") == ["n0", "g0"]
    assert tree.get_provider_uuids_in_tree("host_numa0_gpu0") == ["r", "n0", "g0", "n1"]
    assert tree.root_uuids() == ["r", "s"]
    data = tree.data("host_numa0_gpu0")
    assert (data.uuid, data.parent_uuid, data.root_uuid, data.generation) == \
        ("g0", "n0", "r", None)
    assert tree.exists("host") and tree.exists("r") and "g0" in tree
    assert not tree.exists("nope")
    assert len(tree) == 5
    with pytest.raises(ValueError):
        tree.data("nope")


def test_names_and_uuids_are_unique(tree):
    with pytest.raises(ValueError):
        tree.new_root("host")
    with pytest.raises(ValueError):
        tree.new_child("other", "r", uuid="n0")
    with pytest.raises(ValueError):
        tree.new_child("x", "missing-parent")
    generated = tree.new_child("host_numa2", "r")
    assert tree.data(generated).name == "host_numa2"


def test_remove_takes_the_subtree(tree):
    tree.remove("host_numa0")
    assert tree.get_provider_uuids() == ["r", "n1", "s"]
    assert not tree.exists("g0")
    tree.remove("s")
    assert tree.root_uuids() == ["r"]


def test_inventory_change_checks_use_service_defaults(tree):
    tree.update_inventory("r", {"VCPU": {"total": 8, "reserved": 0, "min_unit": 1,
                                         "max_unit": 2147483647, "step_size": 1,
                                         "allocation_ratio": 1.0}}, generation=4)
    assert tree.data("r").generation == 4
    assert not tree.has_inventory_changed("r", {"VCPU": {"total": 8}})
    assert tree.has_inventory_changed("r", {"VCPU": {"total": 8, "allocation_ratio": 2}})
    assert tree.has_inventory_changed("r", {"VCPU": {"total": 8}, "VGPU": {"total": 1}})
    assert tree.has_inventory_changed("r", {})
    assert not tree.update_inventory("r", {"VCPU": {"total": 8}})
    assert tree.update_inventory("r", {"VCPU": {"total": 9}})


def test_traits_and_aggregates(tree):
    tree.add_traits("n0", "HW_NUMA_ROOT", "CUSTOM_A")
    assert tree.has_traits("n0", ["CUSTOM_A"])
    assert not tree.has_traits("n0", ["CUSTOM_B"])
    assert not tree.have_traits_changed("n0", {"HW_NUMA_ROOT", "CUSTOM_A"})
    tree.remove_traits("n0", "CUSTOM_A")
    assert tree.data("n0").traits == {"HW_NUMA_ROOT"}
    tree.add_aggregates("r", "agg1", "agg2")
    assert tree.in_aggregates("r", ["agg1"])
    tree.remove_aggregates("r", "agg1")
    assert not tree.have_aggregates_changed("r", ["agg2"])
    assert tree.update_aggregates("r", ["agg3"], generation=9)
    assert tree.data("r").aggregates == {"agg3"}
    assert tree.data("r").generation == 9


def test_revision_tracks_changes(tree):
    rev = tree.revision
    tree.update_traits("r", [])  # already empty: no change
    tree.update_inventory("r", {})
    assert not tree.changed_since(rev)
    tree.add_traits("r", "CUSTOM_X")
    assert tree.changed_since(rev)


def test_deep_copies_share_nothing(tree):
    tree.update_inventory("g0", {"VGPU": {"total": 4}})
    tree.add_traits("g0", "CUSTOM_GPU")
    for other in (tree.copy(), copy.deepcopy(tree)):
        assert other.get_provider_uuids() == tree.get_provider_uuids()
        assert other.data("g0") == tree.data("g0")
        assert other.lock is not tree.lock
        other.update_inventory("g0", {"VGPU": {"total": 2}})
        other.add_traits("g0", "CUSTOM_OTHER")
        other.remove("s")
        assert tree.data("g0").inventory == {"VGPU": {"total": 4}}
        assert tree.data("g0").traits == {"CUSTOM_GPU"}
        assert tree.exists("s")
    # Snapshots are copies too.
    snap = tree.data("g0")
    snap.inventory["VGPU"]["total"] = 100
    assert tree.data("g0").inventory["VGPU"]["total"] == 4


def test_copy_subtrees_keeps_only_named_roots(tree):
    only = tree.copy_subtrees(["s"])
    assert only.get_provider_uuids() == ["s"]


def test_populate_from_iterable_accepts_any_order():
    t = ProviderTree()
    t.populate_from_iterable([
        {"uuid": "c", "name": "child", "generation": 1, "parent_provider_uuid": "r"},
        {"uuid": "r", "name": "root", "generation": 2, "parent_provider_uuid": None},
    ])
    assert t.get_provider_uuids() == ["r", "c"]
    t.populate_from_iterable([{"uuid": "c", "name": "renamed", "generation": 5,
                               "parent_provider_uuid": "r"}])
    assert t.data("c").name == "renamed" and t.data("c").generation == 5
    with pytest.raises(ValueError):
        t.populate_from_iterable([{"uuid": "x", "name": "x", "generation": 0,
                                   "parent_provider_uuid": "unknown"}])


def test_concurrent_edits_are_not_lost():
    t = ProviderTree()
    t.new_root("host", "r")
    threads = []
    per_thread = 100

    def work(n: int) -> None:
        for i in range(per_thread):
            t.add_traits("r", f"CUSTOM_T{n}_{i}")
            t.new_child(f"c{n}_{i}", "r")
            t.copy()

    for n in range(4):
        threads.append(threading.Thread(target=work, args=(n,)))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(t.data("r").traits) == 4 * per_thread
    assert len(t.get_provider_uuids()) == 1 + 4 * per_thread
