"""GET /allocation_candidates through the typed request, and claiming one."""

from __future__ import annotations

import pytest

from allotment.client import (
    BadRequest,
    CandidatesRequest,
    MicroversionUnsupported,
    RequestGroup,
)
from tests.client.helpers import make_sharing_provider, new_uuid


@pytest.fixture
def host(placement):
    """compute1 (VCPU, MEMORY_MB) with two GPU children, one of them NVIDIA,
    sharing a disk pool through an aggregate."""
    agg = new_uuid()
    disk = make_sharing_provider(placement, "pool", agg, {"DISK_GB": {"total": 100}})
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("compute1", root)
    tree.update_inventory(root, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    tree.add_aggregates(root, agg)
    gpus = []
    for i, vendor in enumerate(("CUSTOM_NVIDIA", "CUSTOM_AMD")):
        gpu = tree.new_child(f"compute1_gpu{i}", root)
        tree.update_inventory(gpu, {"VGPU": {"total": 2}})
        tree.add_traits(gpu, vendor)
        gpus.append(gpu)
    placement.update_from_provider_tree(tree)
    return {"root": root, "disk": disk, "nvidia": gpus[0], "amd": gpus[1]}


def test_unsuffixed_request_spans_tree_and_sharing_provider(placement, host):
    found = placement.allocation_candidates.get(
        CandidatesRequest.simple({"VCPU": 2, "DISK_GB": 10}))
    assert len(found) == 1
    allocs = found.allocation_requests[0]["allocations"]
    assert allocs == {host["root"]: {"resources": {"VCPU": 2}},
                      host["disk"]: {"resources": {"DISK_GB": 10}}}
    assert found.provider_summaries[host["disk"]]["resources"]["DISK_GB"] == \
        {"capacity": 100, "used": 0}


def test_granular_groups_with_traits_and_mappings(placement, host):
    placement.traits.ensure("CUSTOM_DRAINING")  # named traits must exist
    req = CandidatesRequest(
        RequestGroup(resources={"VCPU": 1}),
        groups={"_GPU": RequestGroup(resources={"VGPU": 1}, required=["CUSTOM_NVIDIA"])},
        root_required=["!CUSTOM_DRAINING"])
    found = placement.allocation_candidates.get(req)
    assert len(found) == 1
    candidate = found.allocation_requests[0]
    assert candidate["mappings"]["_GPU"] == [host["nvidia"]]
    assert candidate["allocations"][host["nvidia"]]["resources"] == {"VGPU": 1}

    # Claim it, mappings included.
    consumer = new_uuid()
    placement.allocations.put(consumer, candidate["allocations"], project_id=new_uuid(),
                              user_id=new_uuid(), mappings=candidate["mappings"])
    assert placement.usages.for_provider(host["nvidia"]).usages == {"VGPU": 1}

    # The root now carries a trait the request forbids: nothing qualifies.
    gen = placement.providers.get(host["root"]).generation
    placement.provider_traits.set(host["root"], ["CUSTOM_DRAINING"], gen)
    assert len(placement.allocation_candidates.get(req)) == 0


def test_any_of_traits_same_subtree_and_limit(placement, host):
    req = CandidatesRequest(
        groups={"_GPU": RequestGroup(resources={"VGPU": 1},
                                     required=[{"CUSTOM_NVIDIA", "CUSTOM_AMD"}]),
                "_HOST": RequestGroup(resources={"VCPU": 1})},
        group_policy="none", same_subtree=[["_GPU", "_HOST"]])
    found = placement.allocation_candidates.get(req)
    assert sorted(c["mappings"]["_GPU"][0] for c in found.allocation_requests) == \
        sorted([host["nvidia"], host["amd"]])
    limited = CandidatesRequest(req.unsuffixed, groups=req.groups, group_policy="none",
                                limit=1)
    assert len(placement.allocation_candidates.get(limited)) == 1


def test_request_checks_before_and_after_sending(placement, host):
    with pytest.raises(MicroversionUnsupported):
        placement.allocation_candidates.get(
            CandidatesRequest.simple({"VCPU": 1}, root_required=["CUSTOM_X"]), version="1.34")
    with pytest.raises(BadRequest):
        placement.allocation_candidates.get(CandidatesRequest.simple({"CUSTOM_NOPE": 1}))
    # An older microversion still works for what it can express.
    old = placement.allocation_candidates.get(CandidatesRequest.simple({"VCPU": 1}),
                                              version="1.12")
    assert len(old) == 1
