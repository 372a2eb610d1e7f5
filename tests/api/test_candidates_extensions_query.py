"""The extended GET /allocation_candidates query (Allotment-Extensions: 1)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from allotment import errors
from allotment.api.candidates_extensions import (
    EXPLAIN_LIMIT_DEFAULT,
    parse_extended_query,
    requested,
)
from allotment.api.candidates_query import parse_allocation_candidates_query

A1 = "0bd4bd94-3b89-4e2e-9ad6-3fcb28d2e2d1"
A2 = "8f47a8c3-18a1-4b2e-b8d8-4fb7ea0d1b0e"
TWO = "resources_A=VCPU:1&resources_B=VGPU:1"


def parse(query: str, version=(1, 39)):
    return parse_extended_query(parse_qsl(query, keep_blank_values=True), version)


def bad(query: str, version=(1, 39)) -> errors.BadRequest:
    with pytest.raises(errors.BadRequest) as info:
        parse(query, version)
    return info.value


def test_the_header_value():
    assert requested(None) is False
    assert requested("1") is True and requested(" 1 ") is True
    with pytest.raises(errors.BadRequest):
        requested("2")


def test_a_standard_query_parses_to_the_standard_request():
    query = TWO + "&group_policy=isolate&limit=3&same_subtree=_A,_B"
    got = parse(query)
    assert got.request.base == parse_allocation_candidates_query(
        parse_qsl(query), (1, 39))
    assert got.request.is_standard and got.explain_limit is None


def test_group_policy_defaults_to_none():
    base = parse(TWO).request.base
    assert base.group_policy is None and not base.isolate


def test_anti_affinity_splits_each_same_subtree_value():
    req = parse(TWO + "&required_N=HW_NUMA_ROOT&same_subtree=_N,_A,!_B").request
    assert req.anti_affinity == ((frozenset({"_N", "_A"}), frozenset({"_B"})),)
    # The positive part is a standard same_subtree; a '!' group alone is
    # trivially in its own subtree.
    assert req.base.same_subtrees == (frozenset({"_N", "_A"}), frozenset({"_B"}))


def test_resourceless_group_named_only_with_bang_is_accepted():
    req = parse(TWO + "&required_N=HW_NUMA_ROOT&same_subtree=_A,!_N").request
    assert req.anti_affinity == ((frozenset({"_A"}), frozenset({"_N"})),)


def test_isolate_root_member_of_can_split_and_explain():
    got = parse(f"resources=VCPU:4,MEMORY_MB:512&resources_A=VGPU:1&resources_B=VGPU:1"
                f"&isolate=_A,_B&root_member_of=in:{A1},{A2}&root_member_of=!{A2}"
                f"&can_split=VCPU&explain=true")
    req = got.request
    assert req.isolate == (frozenset({"_A", "_B"}),)
    assert req.root_member_of == (frozenset({A1, A2}),)
    assert req.forbidden_root_aggs == frozenset({A2})
    assert req.can_split == frozenset({"VCPU"})
    assert got.explain_limit == EXPLAIN_LIMIT_DEFAULT
    assert parse("resources=VCPU:1&explain=true&explain_limit=7").explain_limit == 7
    assert parse("resources=VCPU:1&explain=false").explain_limit is None


@pytest.mark.parametrize(("query", "code"), [
    (TWO + "&isolate=_A,_B&group_policy=isolate", errors.QUERYPARAM_BAD_VALUE),
    (TWO + "&isolate=_A,_C", errors.QUERYPARAM_BAD_VALUE),
    (TWO + "&same_subtree=!_A,!_B", errors.QUERYPARAM_BAD_VALUE),
    (TWO + "&same_subtree=_A,!_A", errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&root_member_of=nope", errors.QUERYPARAM_BAD_VALUE),
    (f"resources=VCPU:1&root_member_of={A1},{A2}", errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&can_split=VCPU&can_split=VCPU", errors.ILLEGAL_DUPLICATE_QUERYPARAM),
    ("resources=VCPU:1&can_split=DISK_GB", errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&explain=1", errors.QUERYPARAM_BAD_VALUE),
    ("resources=VCPU:1&explain_limit=3", errors.QUERYPARAM_BAD_VALUE),
])
def test_bad_extension_queries(query, code):
    assert bad(query).code == code


def test_extensions_need_microversion_1_36():
    assert "1.36" in bad("resources=VCPU:1", (1, 35)).detail
    assert parse("resources=VCPU:1", (1, 36)).request.is_standard


def test_standard_errors_stay_standard():
    # Placement's own message for a malformed standard parameter.
    assert "Invalid query string parameters" in bad("resources=VCPU:1&limit=0").detail
