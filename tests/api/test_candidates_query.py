"""The GET /allocation_candidates query parser, microversion by microversion."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from allotment import errors
from allotment.api.candidates_query import parse_allocation_candidates_query
from allotment.engine import SearchGroup

A1 = "0bd4bd94-3b89-4e2e-9ad6-3fcb28d2e2d1"
A2 = "8f47a8c3-18a1-4b2e-b8d8-4fb7ea0d1b0e"
A3 = "c1d8ec3d-9a39-4c35-9c6b-0e84e1a4bb1b"
RP = "5b2fba1e-74b2-44f6-bd5a-9e6bf5d8b1a9"


def parse(query: str, version=(1, 39)):
    return parse_allocation_candidates_query(
        parse_qsl(query, keep_blank_values=True), version)


def bad(query: str, version=(1, 39), *, code: str = errors.DEFAULT) -> str:
    with pytest.raises(errors.BadRequest) as info:
        parse(query, version)
    assert info.value.code == code
    return info.value.detail


def only(req) -> SearchGroup:
    (g,) = req.groups
    return g


# --- happy paths ------------------------------------------------------------

def test_minimal_request_at_1_10():
    req = parse("resources=VCPU:1,MEMORY_MB:512", (1, 10))
    g = only(req)
    assert g.suffix == "" and dict(g.resources) == {"VCPU": 1, "MEMORY_MB": 512}
    assert req.limit is None and req.group_policy is None
    assert not req.nested_aware and req.microversion == (1, 10)


@pytest.mark.parametrize(("version", "nested"), [((1, 28), False), ((1, 29), True)])
def test_nested_awareness_follows_microversion(version, nested):
    assert parse("resources=VCPU:1", version).nested_aware is nested


def test_amount_parsing_matches_python_int():
    # Placement converts with int(): signs, padding and whitespace are fine.
    g = only(parse("resources=VCPU:+2,MEMORY_MB:007,DISK_GB: 5"))
    assert dict(g.resources) == {"VCPU": 2, "MEMORY_MB": 7, "DISK_GB": 5}


def test_repeated_resource_class_keeps_last_amount():
    assert dict(only(parse("resources=VCPU:1,VCPU:3")).resources) == {"VCPU": 3}


def test_repeated_resources_key_keeps_last_value():
    g = only(parse("resources=VCPU:1&resources=DISK_GB:4"))
    assert dict(g.resources) == {"DISK_GB": 4}


def test_limit_from_1_16_first_value_wins():
    assert parse("resources=VCPU:1&limit=5", (1, 16)).limit == 5
    assert parse("resources=VCPU:1&limit=10&limit=1", (1, 16)).limit == 10


def test_required_traits_from_1_17():
    g = only(parse("resources=VCPU:1&required=HW_CPU_X86_SSE, CUSTOM_A", (1, 17)))
    assert g.required_traits == (frozenset({"HW_CPU_X86_SSE"}), frozenset({"CUSTOM_A"}))
    assert g.forbidden_traits == frozenset()


def test_forbidden_traits_from_1_22():
    g = only(parse("resources=VCPU:1&required=A,!B,!!C", (1, 22)))
    assert g.required_traits == (frozenset({"A"}),)
    assert g.forbidden_traits == {"B", "C"}


def test_repeated_required_before_1_39_keeps_last():
    g = only(parse("resources=VCPU:1&required=,,&required=B", (1, 38)))
    assert g.required_traits == (frozenset({"B"}),)


def test_any_traits_and_repetition_from_1_39():
    g = only(parse("resources=VCPU:1&required=in:A,B&required=C,!D"))
    assert g.required_traits == (frozenset({"A", "B"}), frozenset({"C"}))
    assert g.forbidden_traits == {"D"}


def test_member_of_from_1_21():
    g = only(parse(f"resources=VCPU:1&member_of={A1}", (1, 21)))
    assert g.member_of == (frozenset({A1}),)
    g = only(parse(f"resources=VCPU:1&member_of=in:{A1},{A2}", (1, 21)))
    assert g.member_of == (frozenset({A1, A2}),)


def test_multiple_member_of_from_1_24():
    g = only(parse(f"resources=VCPU:1&member_of={A1}&member_of=in:{A2},{A3}", (1, 24)))
    assert g.member_of == (frozenset({A1}), frozenset({A2, A3}))


def test_forbidden_aggregates_from_1_32():
    g = only(parse(
        f"resources=VCPU:1&member_of=!{A1}&member_of=!in:{A2},{A3}&member_of={A1}",
        (1, 32)))
    assert g.member_of == (frozenset({A1}),)
    assert g.forbidden_aggs == {A1, A2, A3}


def test_uuid_spellings_accepted_like_placement():
    compact = A1.replace("-", "").upper()
    g = only(parse(f"resources=VCPU:1&member_of={compact}"))
    assert g.member_of == (frozenset({compact}),)


def test_granular_groups_from_1_25():
    req = parse("resources=VCPU:1&resources1=VF:1&required1=CUSTOM_A"
                "&resources2=VF:1&group_policy=isolate", (1, 25))
    assert [g.suffix for g in req.groups] == ["", "1", "2"]
    assert req.group("1").required_traits == (frozenset({"CUSTOM_A"}),)
    assert req.group_policy == "isolate" and req.isolate


def test_group_order_is_first_appearance():
    req = parse("required2=A&resources2=VF:1&resources1=VF:1&group_policy=none", (1, 25))
    assert [g.suffix for g in req.groups] == ["2", "1"]


def test_single_suffixed_group_needs_no_policy():
    req = parse("resources1=VCPU:1", (1, 25))
    assert [g.suffix for g in req.groups] == ["1"]


def test_in_tree_from_1_31_is_stripped():
    req = parse(f"resources=VCPU:1&in_tree= {RP} &resources1=DISK_GB:1&in_tree1={RP}",
                (1, 31))
    assert req.group("").in_tree == RP and req.group("1").in_tree == RP


def test_string_suffixes_from_1_33():
    suffix = "_" + "a" * 63
    req = parse(f"resources{suffix}=VCPU:1&resources-x=VF:1&group_policy=none", (1, 33))
    assert [g.suffix for g in req.groups] == [suffix, "-x"]


def test_mappings_are_presentation_from_1_34():
    assert not parse("resources=VCPU:1", (1, 33)).include_mappings
    assert parse("resources=VCPU:1", (1, 34)).include_mappings


def test_root_required_from_1_35():
    req = parse("resources=VCPU:1&root_required=A,!B,C", (1, 35))
    assert req.root_required == {"A", "C"} and req.root_forbidden == {"B"}


def test_same_subtree_and_resourceless_groups_from_1_36():
    req = parse("resources_A=VCPU:1&required_N=HW_NUMA_ROOT&resources_B=FPGA:1"
                "&group_policy=none&same_subtree=_A, _N&same_subtree=_B,_N", (1, 36))
    assert req.same_subtrees == (frozenset({"_A", "_N"}), frozenset({"_B", "_N"}))
    assert req.group("_N").resourceless


def test_unrelated_params_before_schema_are_ignored_by_groups():
    # Only keys that look like group parameters form groups.
    req = parse("resources=VCPU:1&limit=3&group_policy=none")
    assert [g.suffix for g in req.groups] == [""]


# --- schema errors ------------------------------------------------------------

def test_missing_resources_before_1_25():
    assert "'resources' is a required property" in bad("", (1, 10))
    assert "'resources' is a required property" in bad("limit=1", (1, 24))


@pytest.mark.parametrize(("query", "version", "unexpected"), [
    ("resources=VCPU:1&limit=5", (1, 15), "limit"),
    ("resources=VCPU:1&required=A", (1, 16), "required"),
    ("resources=VCPU:1&member_of=" + A1, (1, 20), "member_of"),
    ("resources=VCPU:1&resources1=VCPU:1", (1, 24), "resources1"),
    ("resources=VCPU:1&required2=A", (1, 24), "required2"),
    ("resources=VCPU:1&member_of3=" + A1, (1, 24), "member_of3"),
    ("resources=VCPU:1&group_policy=isolate", (1, 24), "group_policy"),
    ("resources=VCPU:1&bogus=1", (1, 10), "bogus"),
])
def test_parameters_unknown_at_the_microversion(query, version, unexpected):
    detail = bad(query, version)
    assert detail.startswith("Invalid query string parameters: ")
    assert f"'{unexpected}' was unexpected" in detail


@pytest.mark.parametrize(("query", "version", "key"), [
    ("resources01=VCPU:1", (1, 25), "resources01"),
    ("resources_A=VCPU:1", (1, 32), "resources_A"),
    ("resources1@=VCPU:1", (1, 33), "resources1@"),
    ("resources_" + "0123456701234567" * 4 + "=VCPU:1", (1, 33),
     "resources_" + "0123456701234567" * 4),
    ("resources=VCPU:1&root_required=A", (1, 34), "root_required"),
    ("resources=VCPU:1&same_subtree=_A", (1, 35), "same_subtree"),
    ("resources=VCPU:1&in_tree=" + RP, (1, 30), "in_tree"),
])
def test_keys_outside_the_patterns(query, version, key):
    detail = bad(query, version)
    assert detail.startswith("Invalid query string parameters: ")
    if version >= (1, 25):
        assert f"'{key}' does not match any of the regexes" in detail


def test_pattern_error_lists_the_regexes():
    detail = bad("resources1@=VCPU:1", (1, 33))
    assert "^member_of([a-zA-Z0-9_-]{1,64})?$" in detail


@pytest.mark.parametrize("limit", ["cow", "-99", "0", "", "1.5", "01"])
def test_bad_limit(limit):
    detail = bad(f"resources=VCPU:1&limit={limit}", (1, 16))
    assert detail.startswith("Invalid query string parameters: ")
    assert "Failed validating 'pattern'" in detail


def test_bad_first_limit_is_not_hidden_by_a_good_last_one():
    assert "Failed validating 'pattern'" in bad("resources=VCPU:1&limit=cow&limit=1", (1, 16))


def test_bad_group_policy():
    detail = bad("resources=VCPU:1&group_policy=bogus", (1, 25))
    assert "'bogus' is not one of ['none', 'isolate']" in detail
    assert "'bogus' is not one of" in bad(
        "resources=VCPU:1&group_policy=bogus&group_policy=none", (1, 25))


# --- resources syntax -------------------------------------------------------

FORM = ("Badly formed resources parameter. Expected resources query string "
        "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. ")


@pytest.mark.parametrize(("value", "got"), [
    ("", "Got: empty string."), ("  ", "Got: empty string."),
    ("VCPU", "Got: VCPU."), ("VCPU:1:2", "Got: VCPU:1:2."),
    ("VCPU:1,", "Got: ."), ("VCPU=1", "Got: VCPU=1."),
])
def test_badly_formed_resources(value, got):
    assert bad(f"resources={value}", (1, 10)) == FORM + got


def test_non_integer_amount():
    assert bad("resources=VCPU:one", (1, 10)) == (
        "Requested resource VCPU expected positive integer amount. Got: one.")


@pytest.mark.parametrize("amount", ["0", "-1"])
def test_amount_below_one(amount):
    assert bad(f"resources=VCPU:{amount}", (1, 10)) == (
        f"Requested resource VCPU requires amount >= 1. Got: {int(amount)}.")


def test_bad_suffixed_resources():
    assert bad("resources1=", (1, 25)) == FORM + "Got: empty string."


# --- traits syntax ----------------------------------------------------------

PRE = "Invalid query string parameters: "


@pytest.mark.parametrize(("value", "version", "form"), [
    ("", (1, 17), "HW_CPU_X86_VMX,CUSTOM_MAGIC"),
    (",,", (1, 17), "HW_CPU_X86_VMX,CUSTOM_MAGIC"),
    ("A,,B", (1, 21), "HW_CPU_X86_VMX,CUSTOM_MAGIC"),
    ("", (1, 22), "HW_CPU_X86_VMX,!CUSTOM_MAGIC"),
    ("A,!", (1, 22), "HW_CPU_X86_VMX,!CUSTOM_MAGIC"),
])
def test_empty_trait(value, version, form):
    assert bad(f"resources=VCPU:1&required={value}", version) == (
        f"{PRE}Expected 'required' parameter value of the form: {form}. "
        f"Got an empty trait in: {value}")


def test_forbidden_trait_before_1_22():
    assert bad("resources=VCPU:1&required=!CUSTOM_MAGIC", (1, 21)) == (
        f"{PRE}Expected 'required' parameter value of the form: "
        "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !CUSTOM_MAGIC")


def test_any_traits_before_1_39():
    assert bad("resources=VCPU:1&required=in:A,B", (1, 38)) == (
        f"{PRE}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
        "since microversion 1.39. Got: in:A,B")


def test_any_traits_empty_member():
    assert bad("resources=VCPU:1&required=in:A,") == (
        f"{PRE}Expected 'required' parameter value of the form: "
        "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,")


def test_any_traits_cannot_be_forbidden():
    assert bad("resources=VCPU:1&required=in:A,!B") == (
        f"{PRE}The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support "
        "forbidden traits. Got: in:A,!B")


def test_every_repeated_required_is_checked_from_1_39():
    assert "empty trait" in bad("resources=VCPU:1&required=,&required=A")


@pytest.mark.parametrize(("query", "keys"), [
    ("resources=VCPU:1&required=A,!A", "required: (A)"),
    ("resources=VCPU:1&required=in:A,B&required=!A,!B", "required: (A, B)"),
    ("resources1=VCPU:1&required1=B,!B&resources=VCPU:1&required=!A,A",
     "required1: (B), required: (A)"),
])
def test_conflicting_required_and_forbidden(query, keys):
    assert bad(query) == (
        "Conflicting required and forbidden traits found in the following "
        f"traits keys: {keys}")


def test_partly_forbidden_any_of_is_no_conflict():
    g = only(parse("resources=VCPU:1&required=in:A,B&required=!A"))
    assert g.forbidden_traits == {"A"}


def test_conflicts_not_checked_before_forbidden_traits_exist():
    # Before 1.22 a '!' is already a syntax error, so the check never runs.
    assert "Got: A,!A" in bad("resources=VCPU:1&required=A,!A", (1, 21))


# --- member_of syntax -------------------------------------------------------

def test_multiple_member_of_before_1_24():
    assert bad(f"resources=VCPU:1&member_of={A1}&member_of={A2}", (1, 23)) == (
        "Multiple member_of parameters are not supported")


def test_comma_list_needs_in_prefix():
    assert bad(f"resources=VCPU:1&member_of={A1},{A2}", (1, 24)) == (
        "Multiple values for 'member_of' must be prefixed with the 'in:' or "
        f"'!in:' keyword using the valid microversion. Got: {A1},{A2}")


@pytest.mark.parametrize("value", ["not-a-uuid", f"in:{A1},nope", "in:", "!nope"])
def test_member_of_must_be_uuids(value):
    detail = bad(f"resources=VCPU:1&member_of={value}", (1, 32))
    assert detail.startswith(
        "Invalid query string parameters: Expected 'member_of' parameter to "
        "contain valid UUID(s). Got: ")


@pytest.mark.parametrize("value", [f"!{A1}", f"!in:{A1},{A2}"])
def test_forbidden_aggregates_before_1_32(value):
    assert bad(f"resources=VCPU:1&member_of={value}", (1, 31)) == (
        "Forbidden member_of parameters are not supported in the specified "
        "microversion")
    assert bad(f"resources1=VCPU:1&member_of1={value}", (1, 31)) == (
        "Forbidden member_of1 parameters are not supported in the specified "
        "microversion")


# --- in_tree ----------------------------------------------------------------

def test_in_tree_must_be_a_uuid():
    assert bad("resources=VCPU:1&in_tree=life-is-beautiful", (1, 31)) == (
        "Invalid query string parameters: Expected 'in_tree' parameter to be "
        "a format of uuid. Got: life-is-beautiful")


# --- cross-group rules before 1.36 -----------------------------------------

def test_orphaned_traits():
    assert bad("required=FOO&required1=BAR", (1, 25)) == (
        "All traits parameters must be associated with resources.  Found the "
        "following orphaned traits keys: required, required1")


def test_orphaned_member_of():
    assert bad(f"member_of={A1}&member_of3={A3}", (1, 25)) == (
        "All member_of parameters must be associated with resources. Found "
        "the following orphaned member_of keys: member_of, member_of3")


def test_forbidden_only_or_in_tree_only_group_before_1_36():
    assert bad("resources=VCPU:1&required1=!A", (1, 35)) == (
        "All request groups must specify resources.")
    assert bad(f"resources=VCPU:1&in_tree1={RP}", (1, 35)) == (
        "All request groups must specify resources.")


def test_no_group_at_all_before_1_36():
    assert bad("group_policy=isolate", (1, 25)) == (
        "At least one request group (`resources` or `resources{$S}`) is required.")


def test_group_policy_required_for_two_suffixed_groups():
    assert bad("resources1=VCPU:1&resources2=VCPU:1", (1, 25)) == (
        'The "group_policy" parameter is required when specifying more than '
        'one "resources{N}" parameter.')


def test_group_policy_still_required_at_1_39_even_for_resourceless_groups():
    assert "group_policy" in bad(
        "resources_A=VCPU:1&required_N=X&same_subtree=_A,_N")


# --- rules from 1.36 --------------------------------------------------------

def test_at_least_one_group_with_resources():
    assert bad("required=A", (1, 36), code=errors.QUERYPARAM_MISSING_VALUE) == (
        "There must be at least one resources or resources[$S] parameter.")
    assert bad("group_policy=none", (1, 36), code=errors.QUERYPARAM_MISSING_VALUE)


def test_resourceless_group_must_be_in_same_subtree():
    assert bad("resources=VCPU:1&required_N=A&required_M=B&group_policy=none",
               (1, 36), code=errors.QUERYPARAM_BAD_VALUE) == (
        "Resourceless suffixed group request should be specified in "
        "`same_subtree` query param: bad group(s) - ['_M', '_N'].")


def test_resourceless_unsuffixed_group_is_rejected():
    detail = bad("required=A&resources1=VCPU:1", (1, 36), code=errors.QUERYPARAM_BAD_VALUE)
    assert "bad group(s) - ['']." in detail


def test_same_subtree_names_unknown_group():
    assert bad("resources_A=VCPU:1&resources_B=VCPU:1&group_policy=none"
               "&same_subtree=_A,_C", (1, 36), code=errors.QUERYPARAM_BAD_VALUE) == (
        "Real suffixes should be specified in `same_subtree`: ['_C'] not "
        "found in ['_A', '_B'].")


def test_same_subtree_with_empty_suffix():
    assert bad("resources_A=VCPU:1&same_subtree=_A,", (1, 36),
               code=errors.QUERYPARAM_BAD_VALUE) == (
        "Empty string (unsuffixed group) can not be specified in `same_subtree` ")


# --- root_required ----------------------------------------------------------

def test_root_required_only_once():
    assert bad("resources=VCPU:1&root_required=A&root_required=!B", (1, 35),
               code=errors.ILLEGAL_DUPLICATE_QUERYPARAM) == (
        "Query parameter 'root_required' may be specified only once.")


def test_root_required_conflict():
    assert bad("resources=VCPU:1&root_required=AVX2,SSE,!AVX2", (1, 35),
               code=errors.QUERYPARAM_BAD_VALUE) == (
        "Conflicting required and forbidden traits found in root_required: AVX2")


def test_root_required_refuses_any_traits_even_at_1_39():
    assert "only supported since microversion 1.39" in bad(
        "resources=VCPU:1&root_required=in:A,B")


def test_root_required_empty_trait():
    assert bad("resources=VCPU:1&root_required=A,", (1, 35)) == (
        f"{PRE}Expected 'required' parameter value of the form: "
        "HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: A,")


# --- order of checks ----------------------------------------------------------

def test_schema_is_checked_before_values():
    assert "'bogus' was unexpected" in bad("resources=&bogus=1", (1, 10))


def test_request_wide_params_are_checked_before_groups():
    detail = bad("resources=&root_required=A&root_required=B", (1, 35),
                 code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    assert "only once" in detail


def test_groups_are_parsed_in_query_order():
    assert "Got: x." in bad("resources=VCPU:x&required=,", (1, 17))
    assert "empty trait" in bad("required=,&resources=VCPU:x", (1, 17))
