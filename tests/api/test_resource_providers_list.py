"""GET /resource_providers and its filters, microversion by microversion."""

from __future__ import annotations

import pytest

from tests.api.test_resource_providers import allocate, create, new_uuid

AGG_A = "a1a1a1a1-0000-4000-8000-000000000001"
AGG_B = "b2b2b2b2-0000-4000-8000-000000000002"


def names(resp) -> list[str]:
    assert resp.status == 200, resp
    return sorted(p["name"] for p in resp.json["resource_providers"])


def set_aggs(api, uuid: str, aggs: list[str]) -> None:
    gen = api.get(f"/resource_providers/{uuid}").json["generation"]
    resp = api.put(f"/resource_providers/{uuid}/aggregates",
                   json={"aggregates": aggs, "resource_provider_generation": gen})
    assert resp.status == 200, resp


def set_traits(api, uuid: str, traits: list[str]) -> None:
    gen = api.get(f"/resource_providers/{uuid}").json["generation"]
    resp = api.put(f"/resource_providers/{uuid}/traits",
                   json={"traits": traits, "resource_provider_generation": gen})
    assert resp.status == 200, resp


def set_inventory(api, uuid: str, inventories: dict) -> None:
    gen = api.get(f"/resource_providers/{uuid}").json["generation"]
    resp = api.put(f"/resource_providers/{uuid}/inventories",
                   json={"inventories": inventories, "resource_provider_generation": gen})
    assert resp.status == 200, resp


@pytest.fixture
def world(api):
    """Three roots and a child, with aggregates, traits and inventory."""
    uuids = {
        "cn1": create(api, "cn1"),
        "cn2": create(api, "cn2"),
        "ss": create(api, "ss"),
    }
    uuids["numa"] = create(api, "numa", parent=uuids["cn1"])
    set_aggs(api, uuids["cn1"], [AGG_A])
    set_aggs(api, uuids["cn2"], [AGG_A, AGG_B])
    set_aggs(api, uuids["ss"], [AGG_B])
    set_traits(api, uuids["cn1"], ["HW_CPU_X86_AVX2", "STORAGE_DISK_SSD"])
    set_traits(api, uuids["cn2"], ["HW_CPU_X86_AVX2"])
    set_traits(api, uuids["ss"], ["MISC_SHARES_VIA_AGGREGATE"])
    set_inventory(api, uuids["cn1"], {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}})
    set_inventory(api, uuids["cn2"], {"VCPU": {"total": 4, "max_unit": 2},
                                      "MEMORY_MB": {"total": 4096, "step_size": 512}})
    set_inventory(api, uuids["ss"], {"DISK_GB": {"total": 1000, "reserved": 100}})
    return uuids


def test_list_all_and_cache_headers(api, world):
    assert names(api.get("/resource_providers")) == ["cn1", "cn2", "numa", "ss"]
    assert "last-modified" not in api.get("/resource_providers", version="1.14").headers
    assert api.get("/resource_providers", version="1.15").headers["cache-control"] == "no-cache"


def test_list_empty(api):
    resp = api.get("/resource_providers")
    assert resp.json == {"resource_providers": []}


def test_name_and_uuid(api, world):
    assert names(api.get("/resource_providers?name=cn2")) == ["cn2"]
    assert names(api.get("/resource_providers?name=nope")) == []
    assert names(api.get(f"/resource_providers?uuid={world['ss']}", version="1.0")) == ["ss"]
    assert names(api.get(f"/resource_providers?uuid={new_uuid()}")) == []
    # Repeated keys: the last one counts.
    assert names(api.get("/resource_providers?name=cn1&name=cn2")) == ["cn2"]


@pytest.mark.parametrize("query", ["uuid=not-a-uuid", "bogus=1", "in_tree=nope", "uuid="])
def test_invalid_query(api, world, query):
    resp = api.get(f"/resource_providers?{query}")
    assert resp.status == 400
    assert "Invalid query string parameters" in resp.error()["detail"]


@pytest.mark.parametrize("key, since", [
    ("member_of", "1.3"), ("resources", "1.4"), ("in_tree", "1.14"), ("required", "1.18")])
def test_filters_unknown_before_their_microversion(api, key, since):
    major, minor = since.split(".")
    before = f"{major}.{int(minor) - 1}"
    resp = api.get(f"/resource_providers?{key}=x", version=before)
    assert resp.status == 400
    assert "Additional properties are not allowed" in resp.error()["detail"]


def test_member_of(api, world):
    assert names(api.get(f"/resource_providers?member_of={AGG_A}", version="1.3")) == [
        "cn1", "cn2"]
    assert names(api.get(f"/resource_providers?member_of=in:{AGG_A},{AGG_B}")) == [
        "cn1", "cn2", "ss"]
    assert names(api.get(f"/resource_providers?member_of={new_uuid()}")) == []


def test_member_of_repeated_from_1_24(api, world):
    query = f"/resource_providers?member_of={AGG_A}&member_of={AGG_B}"
    resp = api.get(query, version="1.23")
    assert resp.status == 400
    assert "Multiple member_of parameters are not supported" in resp.error()["detail"]
    assert names(api.get(query, version="1.24")) == ["cn2"]


def test_member_of_forbidden_from_1_32(api, world):
    resp = api.get(f"/resource_providers?member_of=!{AGG_A}", version="1.31")
    assert resp.status == 400
    assert ("Forbidden member_of parameters are not supported in the specified "
            "microversion") in resp.error()["detail"]
    assert names(api.get(f"/resource_providers?member_of=!{AGG_A}", version="1.32")) == [
        "numa", "ss"]
    assert names(api.get(f"/resource_providers?member_of=!in:{AGG_A},{AGG_B}")) == ["numa"]
    assert names(api.get(
        f"/resource_providers?member_of={AGG_B}&member_of=!{AGG_A}")) == ["ss"]


@pytest.mark.parametrize("value, fragment", [
    (f"{AGG_A},{AGG_B}", "Multiple values for 'member_of' must be prefixed"),
    ("not-a-uuid", "Expected 'member_of' parameter to contain valid UUID(s)."),
    ("in:", "Expected 'member_of' parameter to contain valid UUID(s)."),
    ("", "Expected 'member_of' parameter to contain valid UUID(s)."),
])
def test_member_of_bad_values(api, value, fragment):
    resp = api.get(f"/resource_providers?member_of={value}")
    assert resp.status == 400
    assert fragment in resp.error()["detail"]


def test_resources_capacity(api, world):
    # cn2's max_unit is 2.
    assert names(api.get("/resource_providers?resources=VCPU:4", version="1.4")) == ["cn1"]
    assert names(api.get("/resource_providers?resources=VCPU:2")) == ["cn1", "cn2"]
    assert names(api.get("/resource_providers?resources=VCPU:2,MEMORY_MB:1024")) == [
        "cn1", "cn2"]
    # step_size 512 on cn2 rules out 1000.
    assert names(api.get("/resource_providers?resources=MEMORY_MB:1000")) == ["cn1"]
    # reserved counts against capacity.
    assert names(api.get("/resource_providers?resources=DISK_GB:900")) == ["ss"]
    assert names(api.get("/resource_providers?resources=DISK_GB:901")) == []
    assert names(api.get("/resource_providers?resources=VCPU:99999999999999999999")) == []


def test_resources_counts_usage(api, world):
    allocate(api, world["cn1"], {"VCPU": 6})
    assert names(api.get("/resource_providers?resources=VCPU:2")) == ["cn1", "cn2"]
    assert names(api.get("/resource_providers?resources=VCPU:3")) == []


@pytest.mark.parametrize("value, fragment", [
    ("", "Badly formed resources parameter. Expected resources query string parameter "
         "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string."),
    ("VCPU", "Got: VCPU."),
    ("VCPU:1:2", "Got: VCPU:1:2."),
    ("VCPU:x", "Requested resource VCPU expected positive integer amount. Got: x."),
    ("VCPU:0", "Requested resource VCPU requires amount >= 1. Got: 0."),
    ("VCPU:-2", "Requested resource VCPU requires amount >= 1. Got: -2."),
    ("NOPE:1", "Invalid resource class in resources parameter: No such resource class NOPE."),
])
def test_resources_bad_values(api, world, value, fragment):
    resp = api.get(f"/resource_providers?resources={value}")
    assert resp.status == 400
    assert fragment in resp.error()["detail"]


def test_in_tree(api, world):
    assert names(api.get(f"/resource_providers?in_tree={world['numa']}", version="1.14")) == [
        "cn1", "numa"]
    assert names(api.get(f"/resource_providers?in_tree={world['cn2']}")) == ["cn2"]
    assert names(api.get(f"/resource_providers?in_tree={new_uuid()}")) == []
    # An unknown tree answers empty before other filters are looked at.
    assert names(api.get(
        f"/resource_providers?in_tree={new_uuid()}&resources=NOPE:1")) == []


def test_required(api, world):
    assert names(api.get("/resource_providers?required=HW_CPU_X86_AVX2", version="1.18")) == [
        "cn1", "cn2"]
    assert names(api.get(
        "/resource_providers?required=HW_CPU_X86_AVX2,STORAGE_DISK_SSD")) == ["cn1"]
    assert names(api.get("/resource_providers?required=HW_CPU_X86_SSE")) == []
    assert names(api.get(
        f"/resource_providers?required=HW_CPU_X86_AVX2&in_tree={world['cn2']}")) == ["cn2"]
    assert names(api.get(
        "/resource_providers?required=HW_CPU_X86_AVX2&resources=VCPU:3")) == ["cn1"]


def test_required_forbidden_from_1_22(api, world):
    resp = api.get("/resource_providers?required=!STORAGE_DISK_SSD", version="1.21")
    assert resp.status == 400
    assert ("Invalid query string parameters: Expected 'required' parameter value of the "
            "form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !STORAGE_DISK_SSD"
            in resp.error()["detail"])
    assert names(api.get("/resource_providers?required=!STORAGE_DISK_SSD",
                         version="1.22")) == ["cn2", "numa", "ss"]
    assert names(api.get(
        "/resource_providers?required=HW_CPU_X86_AVX2,!STORAGE_DISK_SSD")) == ["cn2"]
    # Any number of leading '!' forbid the trait.
    assert names(api.get("/resource_providers?required=!!STORAGE_DISK_SSD")) == [
        "cn2", "numa", "ss"]


def test_required_any_of_from_1_39(api, world):
    query = "/resource_providers?required=in:STORAGE_DISK_SSD,MISC_SHARES_VIA_AGGREGATE"
    resp = api.get(query, version="1.38")
    assert resp.status == 400
    assert "only supported since microversion 1.39" in resp.error()["detail"]
    assert names(api.get(query, version="1.39")) == ["cn1", "ss"]
    both = query + "&required=HW_CPU_X86_AVX2"
    assert names(api.get(both)) == ["cn1"]
    # Before 1.39 only the last 'required' counts.
    assert names(api.get(
        "/resource_providers?required=STORAGE_DISK_SSD&required=HW_CPU_X86_AVX2",
        version="1.38")) == ["cn1", "cn2"]
    assert names(api.get(
        "/resource_providers?required=STORAGE_DISK_SSD&required=HW_CPU_X86_AVX2")) == ["cn1"]


@pytest.mark.parametrize("value, version, fragment", [
    ("", "1.22", "Expected 'required' parameter value of the form: "
                 "HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: "),
    ("", "1.21", "Expected 'required' parameter value of the form: "
                 "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: "),
    ("HW_CPU_X86_AVX2,,X", "1.39", "Got an empty trait in: HW_CPU_X86_AVX2,,X"),
    ("!", "1.39", "Got an empty trait in: !"),
    ("in:A,", "1.39", "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,"),
    ("in:A,!B", "1.39", "does not support forbidden traits. Got: in:A,!B"),
    ("BOGUS_TRAIT", "1.39", 'Invalid trait(s) in "required" parameter: '
                            "No such trait(s): BOGUS_TRAIT."),
    ("!BOGUS_TRAIT", "1.39", "No such trait(s): BOGUS_TRAIT."),
    ("in:HW_CPU_X86_AVX2,BOGUS", "1.39", "No such trait(s): BOGUS."),
])
def test_required_bad_values(api, world, value, version, fragment):
    resp = api.get(f"/resource_providers?required={value}", version=version)
    assert resp.status == 400
    assert fragment in resp.error()["detail"]


def test_filters_combine(api, world):
    query = (f"/resource_providers?member_of={AGG_A}&required=HW_CPU_X86_AVX2"
             "&resources=MEMORY_MB:2048")
    assert names(api.get(query)) == ["cn2"]
