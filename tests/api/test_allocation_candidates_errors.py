"""GET /allocation_candidates: every refusal, with Placement's message and code."""

from __future__ import annotations

import pytest

from tests.api.candidate_helpers import World

U1 = "11111111-1111-1111-1111-111111111111"
U2 = "22222222-2222-2222-2222-222222222222"
UNDEFINED = "placement.undefined_code"
BAD_VALUE = "placement.query.bad_value"

CASES = [
    # (microversion, query, fragment of the detail, code)
    ("1.10", "resources=", "Badly formed resources parameter. Expected resources query "
     "string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.",
     UNDEFINED),
    ("1.10", "", "'resources' is a required property", UNDEFINED),
    ("1.10", "resources=VCPU", "Got: VCPU.", UNDEFINED),
    ("1.10", "resources=VCPU:x", "Requested resource VCPU expected positive integer "
     "amount. Got: x.", UNDEFINED),
    ("1.10", "resources=VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0.",
     UNDEFINED),
    ("1.10", "resources=CUSTOM_NOPE:1", "Invalid resource class in resources parameter: "
     "No such resource class CUSTOM_NOPE.", UNDEFINED),
    ("1.15", "resources=VCPU:1&limit=1", "'limit' was unexpected", UNDEFINED),
    ("1.16", "resources=VCPU:1&limit=0", "Failed validating 'pattern'", UNDEFINED),
    ("1.16", "resources=VCPU:1&limit=-1", "Failed validating 'pattern'", UNDEFINED),
    ("1.16", "resources=VCPU:1&limit=x", "Failed validating 'pattern'", UNDEFINED),
    ("1.16", "resources=VCPU:1&required=HW_CPU_X86_AVX2", "'required' was unexpected",
     UNDEFINED),
    ("1.17", "resources=VCPU:1&required=CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE.",
     UNDEFINED),
    ("1.17", "resources=VCPU:1&required=!HW_CPU_X86_AVX2",
     "Invalid query string parameters: Expected 'required' parameter value of the form: "
     "HW_CPU_X86_VMX,CUSTOM_MAGIC.", UNDEFINED),
    ("1.17", "resources=VCPU:1&required=", "Expected 'required' parameter value of the "
     "form: HW_CPU_X86_VMX,CUSTOM_MAGIC.", UNDEFINED),
    ("1.22", "resources=VCPU:1&required=HW_CPU_X86_AVX2,", "Expected 'required' "
     "parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC.", UNDEFINED),
    ("1.22", "resources=VCPU:1&required=!CUSTOM_NOPE", "No such trait(s): CUSTOM_NOPE.",
     UNDEFINED),
    ("1.22", "resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2",
     "Conflicting required and forbidden traits found in the following traits keys: "
     "required: (HW_CPU_X86_AVX2)", UNDEFINED),
    ("1.38", "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE",
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39.",
     UNDEFINED),
    ("1.39", "resources=VCPU:1&required=in:HW_CPU_X86_AVX2,CUSTOM_NOPE",
     "No such trait(s): CUSTOM_NOPE.", UNDEFINED),
    ("1.18", f"resources=VCPU:1&member_of={U1}", "'member_of' was unexpected", UNDEFINED),
    ("1.21", "resources=VCPU:1&member_of=nope", "Expected 'member_of' parameter to contain "
     "valid UUID(s).", UNDEFINED),
    ("1.21", f"resources=VCPU:1&member_of={U1},{U2}", "Multiple values for 'member_of' "
     "must be prefixed with the 'in:' or '!in:' keyword using the valid microversion.",
     UNDEFINED),
    ("1.23", f"resources=VCPU:1&member_of={U1}&member_of={U2}",
     "Multiple member_of parameters are not supported", UNDEFINED),
    ("1.31", f"resources=VCPU:1&member_of=!{U1}",
     "Forbidden member_of parameters are not supported in the specified microversion",
     UNDEFINED),
    ("1.32", f"resources=VCPU:1&member_of=!in:{U1},nope",
     "Expected 'member_of' parameter to contain valid UUID(s).", UNDEFINED),
    ("1.24", "resources=VCPU:1&resources1=VCPU:1", "'resources1' was unexpected", UNDEFINED),
    ("1.24", "resources=VCPU:1&group_policy=none", "'group_policy' was unexpected",
     UNDEFINED),
    ("1.25", "resources01=VCPU:1", "'resources01' does not match any of the regexes",
     UNDEFINED),
    ("1.25", "resources_A=VCPU:1", "'resources_A' does not match any of the regexes",
     UNDEFINED),
    ("1.33", "resources1@=VCPU:1", "'resources1@' does not match any of the regexes",
     UNDEFINED),
    ("1.33", "resources_" + "x" * 65 + "=VCPU:1", "does not match any of the regexes",
     UNDEFINED),
    ("1.25", "resources=VCPU:1&group_policy=bogus",
     "'bogus' is not one of ['none', 'isolate']", UNDEFINED),
    ("1.25", "resources1=VCPU:1&resources2=VCPU:1", 'The "group_policy" parameter is '
     'required when specifying more than one "resources{N}" parameter.', UNDEFINED),
    ("1.25", "resources=VCPU:1&required=HW_CPU_X86_AVX2&required1=HW_CPU_X86_AVX2",
     "All traits parameters must be associated with resources.  Found the following "
     "orphaned traits keys: required1", UNDEFINED),
    ("1.25", f"resources=VCPU:1&member_of2={U1}", "All member_of parameters must be "
     "associated with resources. Found the following orphaned member_of keys: member_of2",
     UNDEFINED),
    ("1.25", "group_policy=none", "At least one request group (`resources` or "
     "`resources{$S}`) is required.", UNDEFINED),
    ("1.30", f"resources=VCPU:1&in_tree={U1}", "Invalid query string parameters",
     UNDEFINED),
    ("1.31", "resources=VCPU:1&in_tree=nope", "Expected 'in_tree' parameter to be a "
     "format of uuid. Got: nope", UNDEFINED),
    ("1.34", "resources=VCPU:1&root_required=HW_CPU_X86_AVX2",
     "'root_required' does not match any of the regexes", UNDEFINED),
    ("1.35", "resources=VCPU:1&root_required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2",
     "Conflicting required and forbidden traits found in root_required: HW_CPU_X86_AVX2",
     BAD_VALUE),
    ("1.35", "resources=VCPU:1&root_required=CUSTOM_NO_EXIST",
     "No such trait(s): CUSTOM_NO_EXIST.", UNDEFINED),
    ("1.35", "resources=VCPU:1&root_required=!CUSTOM_NO_EXIST",
     "No such trait(s): CUSTOM_NO_EXIST.", UNDEFINED),
    ("1.35", "resources=VCPU:1&root_required=HW_CPU_X86_AVX2&root_required=COMPUTE_NODE",
     "Query parameter 'root_required' may be specified only once.",
     "placement.query.duplicate_key"),
    ("1.38", "resources=VCPU:1&root_required=in:HW_CPU_X86_AVX2,COMPUTE_NODE",
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported", UNDEFINED),
    ("1.35", "resources=VCPU:1&same_subtree=_A", "'same_subtree' does not match any of "
     "the regexes", UNDEFINED),
    ("1.35", "resources=VCPU:1&required_A=HW_CPU_X86_AVX2", "orphaned traits keys: "
     "required_A", UNDEFINED),
    ("1.36", "resources=VCPU:1&required_A=HW_CPU_X86_AVX2",
     "Resourceless suffixed group request should be specified in `same_subtree` query "
     "param: bad group(s) - ['_A'].", BAD_VALUE),
    ("1.36", "required_A=HW_CPU_X86_AVX2&same_subtree=_A",
     "There must be at least one resources or resources[$S] parameter.",
     "placement.query.missing_value"),
    ("1.36", "resources_A=VCPU:1&same_subtree=_A,_B",
     "Real suffixes should be specified in `same_subtree`: ['_B'] not found in ['_A'].",
     BAD_VALUE),
    ("1.36", "resources_A=VCPU:1&same_subtree=_A,",
     "Empty string (unsuffixed group) can not be specified in `same_subtree`", BAD_VALUE),
]


@pytest.mark.parametrize(("version", "query", "fragment", "code"), CASES,
                         ids=[f"{v} {q}"[:60] for v, q, _, _ in CASES])
def test_refused(api, version, query, fragment, code):
    World(api).add("cn", inv={"VCPU": 4})
    resp = api.get(f"/allocation_candidates?{query}", version=version)
    assert resp.status == 400, resp
    error = resp.error()
    assert fragment in error["detail"]
    if version >= "1.23":
        assert error["code"] == code
    else:
        assert "code" not in error


def test_only_json_is_served(api):
    resp = api.get("/allocation_candidates?resources=VCPU:1", headers={"Accept": "text/plain"})
    assert resp.status == 406


def test_names_are_checked_in_request_order(api):
    resp = api.get("/allocation_candidates?resources=CUSTOM_A:1&required=CUSTOM_B",
                   version="1.17")
    assert "No such resource class CUSTOM_A." in resp.error()["detail"]
    # Root traits come first, then each group: classes, then traits.
    resp = api.get("/allocation_candidates?resources=CUSTOM_A:1"
                   "&root_required=CUSTOM_B")
    assert "No such trait(s): CUSTOM_B." in resp.error()["detail"]


def test_requests_placement_gives_up_on_early_are_empty_not_refused(api):
    """Placement stops at the first filter that leaves nothing to search,
    so names further on are never looked up."""
    w = World(api)
    w.add("cn", inv={"VCPU": 4}, traits=["COMPUTE_NODE"])
    empty = {"allocation_requests": [], "provider_summaries": {}}
    for query in (
        # No root has the trait: the groups are not looked at.
        "resources=CUSTOM_NOPE:1&root_required=HW_CPU_X86_AVX2",
        # No provider is in the aggregate: the group's traits are not looked at.
        f"resources=VCPU:1&member_of={U1}&required=CUSTOM_NOPE",
        # No such tree: the next group is not looked at.
        f"resources1=VCPU:1&in_tree1={U1}&resources2=CUSTOM_NOPE:1&group_policy=none",
        # Nobody has room: the next group is not looked at.
        "resources1=VCPU:5&resources2=CUSTOM_NOPE:1&group_policy=none",
    ):
        resp = api.get(f"/allocation_candidates?{query}")
        assert resp.status == 200, (query, resp)
        assert resp.json == empty
    # ... but traits are looked up before the tree is.
    resp = api.get(f"/allocation_candidates?resources=VCPU:1&in_tree={U1}"
                   "&required=CUSTOM_NOPE")
    assert resp.status == 400


def test_lower_case_names_follow_the_same_order(api):
    """A lower-case trait is just a trait no provider can have: refused when
    Placement gets to it, not looked at when an earlier group found nothing.
    Groups are looked at in the order they first appear in the query."""
    w = World(api)
    w.add("cn", inv={"VCPU": 4})
    gives_up = "resources1=DISK_GB:1&resources2=VCPU:1&required2=hw_cpu_x86_avx2" \
               "&group_policy=none"
    assert api.get(f"/allocation_candidates?{gives_up}").json["allocation_requests"] == []
    refused = "resources2=VCPU:1&required2=hw_cpu_x86_avx2&resources1=DISK_GB:1" \
              "&group_policy=none"
    resp = api.get(f"/allocation_candidates?{refused}")
    assert resp.status == 400
    assert "No such trait(s): hw_cpu_x86_avx2." in resp.error()["detail"]


def test_an_earlier_group_matching_nothing_on_its_own_ends_the_request(api):
    """Placement searches each group, in query order, before looking at the
    names of the next one."""
    w = World(api)
    w.add("cn", inv={"VCPU": 8}, aggs=["B"])
    w.add("cn_gpu", parent="cn", inv={"VGPU": 4})
    # The unsuffixed group passes every check on names and room, but its
    # search finds nothing: the host is in the forbidden aggregate.
    query = w.query("resources=VCPU:1&member_of=!{B}&resources1=VGPU:1"
                    "&required1=CUSTOM_NOWHERE&group_policy=none")
    resp = w.get(query)
    assert resp.json == {"allocation_requests": [], "provider_summaries": {}}
    # The same names, with the first group matching something: refused.
    query = w.query("resources=VCPU:1&resources1=VGPU:1&required1=CUSTOM_NOWHERE"
                    "&group_policy=none")
    assert "No such trait(s): CUSTOM_NOWHERE." in w.get(query, status=400).error()["detail"]
    # Suffixed groups are searched alone too, each before the next.
    query = "resources1=VGPU:8&resources2=VCPU:1&required2=CUSTOM_NOWHERE&group_policy=none"
    assert w.get(query).json["allocation_requests"] == []
