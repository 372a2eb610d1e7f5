"""CandidatesRequest: validation, query rendering and minimum microversion."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from allotment.client import CandidatesRequest, MicroversionUnsupported, RequestGroup


def test_simple_request_renders_sorted_resources():
    req = CandidatesRequest.simple({"VCPU": 2, "MEMORY_MB": 512}, limit=5)
    assert req.params() == [("resources", "MEMORY_MB:512,VCPU:2"), ("limit", "5")]
    assert req.query_string() == "resources=MEMORY_MB:512,VCPU:2&limit=5"
    assert req.min_version() == "1.16"


def test_full_granular_request():
    req = CandidatesRequest(
        RequestGroup(resources={"VCPU": 1}, required=["HW_CPU_X86_AVX2"],
                     forbidden=["CUSTOM_SLOW"], member_of=["agg1", {"agg2", "agg3"}],
                     forbidden_aggregates=["agg9"], in_tree="root-1"),
        groups={
            "_GPU": RequestGroup(resources={"VGPU": 1},
                                 required=["CUSTOM_NVIDIA", {"CUSTOM_A", "CUSTOM_B"}]),
            "_NIC": RequestGroup(required=["CUSTOM_PHYSNET"]),
        },
        group_policy="isolate",
        same_subtree=[["_GPU", "_NIC"]],
        root_required=["COMPUTE_STATUS_ENABLED", "!CUSTOM_MAINT"],
    )
    assert req.params() == [
        ("resources", "VCPU:1"),
        ("required", "HW_CPU_X86_AVX2,!CUSTOM_SLOW"),
        ("member_of", "agg1"),
        ("member_of", "in:agg2,agg3"),
        ("member_of", "!in:agg9"),
        ("in_tree", "root-1"),
        ("resources_GPU", "VGPU:1"),
        ("required_GPU", "CUSTOM_NVIDIA"),
        ("required_GPU", "in:CUSTOM_A,CUSTOM_B"),
        ("required_NIC", "CUSTOM_PHYSNET"),
        ("group_policy", "isolate"),
        ("root_required", "COMPUTE_STATUS_ENABLED,!CUSTOM_MAINT"),
        ("same_subtree", "_GPU,_NIC"),
    ]
    # The rendered string round-trips to the same pairs.
    assert parse_qsl(req.query_string()) == req.params()
    assert req.min_version() == "1.39"


@pytest.mark.parametrize(("request_", "version"), [
    (CandidatesRequest.simple({"VCPU": 1}), "1.10"),
    (CandidatesRequest.simple({"VCPU": 1}, required=["A"]), "1.17"),
    (CandidatesRequest.simple({"VCPU": 1}, member_of=["a"]), "1.21"),
    (CandidatesRequest.simple({"VCPU": 1}, forbidden=["A"]), "1.22"),
    (CandidatesRequest.simple({"VCPU": 1}, member_of=["a", "b"]), "1.24"),
    (CandidatesRequest(groups={"1": RequestGroup(resources={"VCPU": 1})}), "1.25"),
    (CandidatesRequest.simple({"VCPU": 1}, in_tree="r"), "1.31"),
    (CandidatesRequest.simple({"VCPU": 1}, forbidden_aggregates=["a"]), "1.32"),
    (CandidatesRequest(groups={"_X": RequestGroup(resources={"VCPU": 1})}), "1.33"),
    (CandidatesRequest.simple({"VCPU": 1}, root_required=["A"]), "1.35"),
    (CandidatesRequest(groups={"1": RequestGroup(resources={"VCPU": 1}),
                               "2": RequestGroup(required=["A"])},
                       group_policy="none", same_subtree=[["1", "2"]]), "1.36"),
    (CandidatesRequest.simple({"VCPU": 1}, required=[{"A", "B"}]), "1.39"),
])
def test_minimum_version_follows_features(request_, version):
    assert request_.min_version() == version


def test_a_request_above_the_call_version_is_refused():
    req = CandidatesRequest.simple({"VCPU": 1}, root_required=["A"])
    with pytest.raises(MicroversionUnsupported):
        req.check_version("1.34")
    req.check_version("1.35")


@pytest.mark.parametrize("kwargs", [
    {"groups": {"bad suffix": RequestGroup(resources={"VCPU": 1})}},
    {"unsuffixed": RequestGroup(resources={"VCPU": 1}), "group_policy": "sometimes"},
    {"unsuffixed": RequestGroup(resources={"VCPU": 1}), "limit": 0},
    {"unsuffixed": RequestGroup(resources={"VCPU": 1}), "same_subtree": [["_X"]]},
    {"unsuffixed": RequestGroup(required=["A"])},
    {"groups": {"1": RequestGroup(resources={"VCPU": 1}),
                "2": RequestGroup(resources={"VGPU": 1})}},
])
def test_invalid_requests_fail_early(kwargs):
    with pytest.raises(ValueError):
        CandidatesRequest(**kwargs)


@pytest.mark.parametrize("amount", [0, -1, 1.5, True, "2"])
def test_amounts_must_be_positive_integers(amount):
    with pytest.raises(ValueError):
        RequestGroup(resources={"VCPU": amount})
