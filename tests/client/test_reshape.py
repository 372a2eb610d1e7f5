"""The reshape flow end to end with the example vGPU driver."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from allotment.client import (
    ApiError,
    ReshapeFailed,
    ReshapeNeeded,
    TreeUpdater,
    exceptions,
)
from tests.client.helpers import new_uuid, recorded

_PATH = Path(__file__).resolve().parents[2] / "examples" / "vgpu_driver.py"
_spec = importlib.util.spec_from_file_location("vgpu_driver", _PATH)
vgpu_driver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vgpu_driver)

HOST = "compute1"
GPUS = {"0000:81:00.0": 4, "0000:82:00.0": 4}
PROJECT, USER = new_uuid(), new_uuid()


def flat_host(placement):
    """A host in the driver's old layout, with instances using vGPUs."""
    driver = vgpu_driver.VGPUHostDriver(HOST, GPUS)
    assert TreeUpdater(placement, driver, HOST).run(startup=True) is False
    root = placement.providers.list(name=HOST)[0].uuid
    assert placement.inventories.get(root).inventories["VGPU"]["total"] == 8
    consumers = {}
    for amount in (2, 3, 1):
        consumer = new_uuid()
        placement.allocations.put(consumer, {root: {"VGPU": amount, "VCPU": 2}},
                                  project_id=PROJECT, user_id=USER)
        consumers[consumer] = amount
    return driver, root, consumers


def vgpu_usage(placement, root):
    """VGPU usage per provider of the tree, and each consumer's VGPU total."""
    per_provider = {}
    for p in placement.providers.in_tree(root):
        used = placement.usages.for_provider(p.uuid).usages.get("VGPU", 0)
        cap = placement.inventories.get(p.uuid).inventories.get("VGPU")
        per_provider[p.name] = (used, cap["total"] if cap else 0)
    return per_provider


def consumer_vgpus(placement, consumer):
    record = placement.allocations.get(consumer)["allocations"]
    return {rp: a["resources"].get("VGPU", 0) for rp, a in record.items()
            if a["resources"].get("VGPU")}


def test_reshape_moves_live_allocations_to_gpu_children(placement):
    driver, root, consumers = flat_host(placement)
    driver.nested = True
    updater = TreeUpdater(placement, driver, HOST)
    before = {c: placement.allocations.get(c) for c in consumers}

    # Outside start-up a reshape is refused and nothing changes.
    with pytest.raises(ReshapeNeeded):
        updater.run(startup=False)
    assert "VGPU" in placement.inventories.get(root).inventories
    assert [p.uuid for p in placement.providers.in_tree(root)] == [root]

    rec = recorded(placement)
    assert updater.run(startup=True) is True
    assert [(m, p) for m, p, _ in rec.writes() if p == "/reshaper"] == [("POST", "/reshaper")]

    children = {driver.gpu_uuid(pci) for pci in GPUS}
    assert {p.uuid for p in placement.providers.in_tree(root)} == {root} | children
    assert "VGPU" not in placement.inventories.get(root).inventories
    usage = vgpu_usage(placement, root)
    assert usage[HOST] == (0, 0)
    assert sum(used for used, _ in usage.values()) == sum(consumers.values())
    assert all(used <= cap for used, cap in usage.values())
    for consumer, amount in consumers.items():
        after = placement.allocations.get(consumer)
        vgpus = consumer_vgpus(placement, consumer)
        # Each consumer's vGPUs sit whole on one GPU, nothing else moved.
        assert list(vgpus.values()) == [amount] and set(vgpus) <= children
        assert after["allocations"][root]["resources"] == {"VCPU": 2}
        assert after["consumer_generation"] == before[consumer]["consumer_generation"] + 1
        assert (after["project_id"], after["user_id"]) == (PROJECT, USER)
    for pci in GPUS:
        assert placement.provider_traits.get(driver.gpu_uuid(pci)).traits == \
            {vgpu_driver.GPU_TRAIT}

    # The periodic run afterwards finds nothing to do.
    rec.log.clear()
    assert updater.run(startup=False) is False
    assert rec.writes() == []


def test_a_claim_racing_the_reshape_lands_first_or_fails(placement, connect):
    """A claim between reading allocations and POST /reshaper makes the
    reshape fail as a whole; the restarted reshape then moves it too."""
    driver, root, consumers = flat_host(placement)
    driver.nested = True
    scheduler = connect()
    late = new_uuid()

    class ClaimDuringReshape:
        def update_provider_tree(self, tree, allocations=None):
            if allocations is not None and late not in consumers:
                scheduler.allocations.put(late, {root: {"VGPU": 1}},
                                          project_id=PROJECT, user_id=USER)
                consumers[late] = 1
            driver.update_provider_tree(tree, allocations)

    with pytest.raises(ReshapeFailed) as info:
        TreeUpdater(placement, ClaimDuringReshape(), HOST).run(startup=True)
    assert isinstance(info.value.cause, exceptions.GenerationConflict)
    # Nothing of the reshape happened: VGPU and every claim are still on the root.
    assert placement.inventories.get(root).inventories["VGPU"]["total"] == 8
    assert placement.usages.for_provider(root).usages["VGPU"] == 7

    # Start-up again (as after the failure): this time the late claim moves too.
    assert TreeUpdater(placement, driver, HOST).run(startup=True) is True
    usage = vgpu_usage(placement, root)
    assert sum(used for used, _ in usage.values()) == 7
    assert consumer_vgpus(placement, late) and root not in consumer_vgpus(placement, late)

    # A claim after the reshape against the old layout fails.
    with pytest.raises(ApiError):
        scheduler.allocations.put(new_uuid(), {root: {"VGPU": 1}},
                                  project_id=PROJECT, user_id=USER)
    assert sum(used for used, _ in vgpu_usage(placement, root).values()) == 7


def test_concurrent_claims_never_over_allocate(placement, connect):
    """Claims hammer the root while the host reshapes; every successful claim
    survives the reshape and no provider ends above capacity."""
    driver, root, consumers = flat_host(placement)
    driver.nested = True
    scheduler = connect()
    stop = threading.Event()
    granted: list[str] = []
    refused: list[str] = []

    def claim_forever():
        while not stop.is_set():
            consumer = new_uuid()
            try:
                scheduler.allocations.put(consumer, {root: {"VGPU": 1}},
                                          project_id=PROJECT, user_id=USER)
                granted.append(consumer)
            except ApiError:
                refused.append(consumer)
                if len(refused) > 20:
                    return

    worker = threading.Thread(target=claim_forever)
    worker.start()
    try:
        for _attempt in range(20):
            try:
                if TreeUpdater(placement, driver, HOST).run(startup=True):
                    break
            except ReshapeFailed:
                continue
        else:
            pytest.fail("the reshape never succeeded")
    finally:
        stop.set()
        worker.join(60)

    usage = vgpu_usage(placement, root)
    assert all(used <= cap for used, cap in usage.values()), usage
    total = sum(consumers.values()) + len(granted)
    assert sum(used for used, _ in usage.values()) == total
    assert total <= sum(GPUS.values())
    for consumer in granted:
        assert sum(consumer_vgpus(placement, consumer).values()) == 1
        assert root not in consumer_vgpus(placement, consumer)
    assert "VGPU" not in placement.inventories.get(root).inventories


def test_reshape_that_does_not_fit_fails_cleanly(placement):
    _driver, root, _consumers = flat_host(placement)
    # The new layout has less room than what is in use: the driver refuses.
    small = vgpu_driver.VGPUHostDriver(HOST, {"0000:81:00.0": 2}, nested=True)
    with pytest.raises(vgpu_driver.CannotPlaceVGPUs):
        TreeUpdater(placement, small, HOST).run(startup=True)
    assert placement.usages.for_provider(root).usages["VGPU"] == 6


def test_reshape_rejected_by_the_service_raises_reshape_failed(placement):
    driver, root, _consumers = flat_host(placement)
    driver.nested = True

    class Greedy:
        """Moves allocations onto the GPUs beyond their capacity."""

        def update_provider_tree(self, tree, allocations=None):
            driver.update_provider_tree(tree, allocations)
            if allocations is not None:
                gpu = driver.gpu_uuid("0000:81:00.0")
                for record in allocations.values():
                    moved = record["allocations"]
                    total = sum(a["resources"].pop("VGPU", 0) for a in moved.values())
                    moved.setdefault(gpu, {"resources": {}})["resources"]["VGPU"] = total

    with pytest.raises(ReshapeFailed) as info:
        TreeUpdater(placement, Greedy(), HOST).run(startup=True)
    assert isinstance(info.value.cause, ApiError)
    assert placement.usages.for_provider(root).usages["VGPU"] == 6
    assert placement.inventories.get(root).inventories["VGPU"]["total"] == 8


def test_example_command_line(placement, transport_kind, request, db):
    if transport_kind == "http":
        args = ["--url", request.getfixturevalue("live_server"), "--roles", "admin,service"]
    else:
        args = ["--database-url", request.getfixturevalue("database_url")]
    common = [*args, "--host", HOST, "--gpu", "0000:81:00.0=4"]
    assert vgpu_driver.main(common) == 0
    root = placement.providers.list(name=HOST)[0].uuid
    placement.allocations.put(new_uuid(), {root: {"VGPU": 3}}, project_id=PROJECT,
                              user_id=USER)
    assert vgpu_driver.main([*common, "--nested"]) == 0
    gpu = vgpu_driver.VGPUHostDriver(HOST, {}).gpu_uuid("0000:81:00.0")
    assert placement.usages.for_provider(gpu).usages == {"VGPU": 3}
