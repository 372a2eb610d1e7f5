"""CandidatesRequest with allotment's extensions: rendering, checks, and
answers from the service on every transport."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from allotment.client import CandidatesRequest, RequestGroup
from tests.client.helpers import new_uuid


def test_standard_requests_send_no_extension_header():
    req = CandidatesRequest.simple({"VCPU": 1})
    assert req.headers() == {}
    assert not req.extensions


def test_extension_parameters_render_and_opt_in():
    agg1, agg2, agg3 = "a1", "a2", "a3"
    req = CandidatesRequest(
        RequestGroup(resources={"VCPU": 1}),
        groups={"_A": RequestGroup(resources={"VGPU": 1}),
                "_B": RequestGroup(resources={"VGPU": 1}),
                "_N": RequestGroup(required=["HW_NUMA_ROOT"])},
        same_subtree=[["_N", "_A", "!_B"]], isolate=[["_A", "_B"]],
        root_member_of=[agg1, {agg2, agg3}], forbidden_root_aggregates=[agg3],
        explain=True, explain_limit=5)
    assert req.extensions
    assert req.headers() == {"Allotment-Extensions": "1"}
    params = parse_qsl(req.query_string())
    assert ("same_subtree", "_N,_A,!_B") in params
    assert ("isolate", "_A,_B") in params
    assert [v for k, v in params if k == "root_member_of"] == [
        "a1", "in:a2,a3", "!in:a3"]
    assert ("explain", "true") in params and ("explain_limit", "5") in params
    assert not [k for k, _ in params if k == "group_policy"]
    assert req.min_version() == "1.36"


def test_group_policy_is_optional_only_with_the_extensions():
    groups = {"_A": RequestGroup(resources={"VGPU": 1}),
              "_B": RequestGroup(resources={"VGPU": 1})}
    with pytest.raises(ValueError, match="group_policy is required"):
        CandidatesRequest(groups=groups)
    assert CandidatesRequest(groups=groups, extensions=True).headers()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"isolate": [["_A", "_X"]]}, "isolate names unknown group"),
    ({"isolate": [["_A", "_B"]], "group_policy": "none"}, "mutually exclusive"),
    ({"same_subtree": [["!_A"]]}, "at least one suffix without"),
    ({"same_subtree": [["_A", "!_X"]]}, "unknown group"),
    ({"explain_limit": 3}, "explain_limit needs explain"),
    ({"root_member_of": [set()]}, "must not be empty"),
    ({"can_split": ["VGPU"]}, "can_split names classes"),
])
def test_bad_extension_requests_are_refused_before_sending(kwargs, message):
    groups = {"_A": RequestGroup(resources={"VGPU": 1}),
              "_B": RequestGroup(resources={"VGPU": 1})}
    with pytest.raises(ValueError, match=message):
        CandidatesRequest(groups=groups, **kwargs)


@pytest.fixture
def zones(placement):
    """Two hosts, each with a GPU child holding two VGPUs; host 1 in az."""
    az = new_uuid()
    hosts = []
    for i in range(2):
        root = new_uuid()
        tree = placement.get_provider_tree_and_ensure_root(f"host{i}", root)
        gpu = tree.new_child(f"host{i}_gpu", root)
        tree.update_inventory(gpu, {"VGPU": {"total": 2}})
        if i == 1:
            tree.add_aggregates(root, az)
        placement.update_from_provider_tree(tree)
        hosts.append((root, gpu))
    return az, hosts


def test_extension_requests_against_the_service(placement, zones):
    az, hosts = zones
    gpus = {"_A": RequestGroup(resources={"VGPU": 1}),
            "_B": RequestGroup(resources={"VGPU": 1})}
    found = placement.allocation_candidates.get(
        CandidatesRequest(groups=gpus, root_member_of=[az]))
    # group_policy defaulted to none: both VGPUs from host1's one GPU.
    assert [list(ar["allocations"]) for ar in found.allocation_requests] == [[hosts[1][1]]]
    assert found.explanation is None
    found = placement.allocation_candidates.get(
        CandidatesRequest(groups=gpus, isolate=[["_A", "_B"]], explain=True))
    assert found.allocation_requests == []
    reasons = {t["root_provider_uuid"]: t["reason"] for t in found.explanation["trees"]}
    assert reasons == {hosts[0][0]: "isolation", hosts[1][0]: "isolation"}


def test_can_split_renders_and_splits(placement):
    req = CandidatesRequest.simple({"VCPU": 6}, can_split=["VCPU"])
    assert ("can_split", "VCPU") in req.params() and req.headers()
    root = new_uuid()
    tree = placement.get_provider_tree_and_ensure_root("numa-host", root)
    nodes = []
    for i in range(2):
        node = tree.new_child(f"numa-host_numa{i}", root)
        tree.update_inventory(node, {"VCPU": {"total": 4}})
        nodes.append(node)
    placement.update_from_provider_tree(tree)
    found = placement.allocation_candidates.get(req)
    assert [sorted(r["resources"]["VCPU"] for r in ar["allocations"].values())
            for ar in found.allocation_requests] == [[2, 4]]
