"""Names and numbers mean the same on every database.

MySQL compares strings with the column's collation (by default case- and
trailing-space-insensitive) and stores 4-byte UTF-8 only as utf8mb4; these
tests pin down that a name is its exact bytes everywhere, as on PostgreSQL
and SQLite, and that the largest integers the API accepts round-trip.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

import pytest

PROJECT = "3c7e1f0a-8a61-4c1e-9b55-2b1d6f0e9a11"
USER = "a1b2c3d4-0000-4000-8000-000000000001"
INT32_MAX = 2**31 - 1


@pytest.mark.parametrize("first, second", [
    ("compute-Host", "compute-host"),
    ("rack 1", "rack 1 "),
    ("naïve", "naive"),
    ("straße", "strasse"),
])
def test_provider_names_differing_in_case_space_or_accent_are_distinct(api, first, second):
    a = api.post("/resource_providers", json={"name": first})
    b = api.post("/resource_providers", json={"name": second})
    assert a.status == 200, a
    assert b.status == 200, b
    found = api.get("/resource_providers?" + urlencode({"name": first})).json["resource_providers"]
    assert [p["name"] for p in found] == [first]
    found = api.get("/resource_providers?" + urlencode({"name": second})).json["resource_providers"]
    assert [p["name"] for p in found] == [second]
    # Renaming one to the other's exact name is still a conflict.
    dup = api.put(f"/resource_providers/{b.json['uuid']}", json={"name": first})
    assert dup.status == 409, dup


def test_four_byte_characters_round_trip(api):
    name = "gpu-🚀-節點"
    resp = api.post("/resource_providers", json={"name": name})
    assert resp.status == 200, resp
    shown = api.get(f"/resource_providers/{resp.json['uuid']}")
    assert shown.json["name"] == name


def test_custom_classes_and_traits_are_exact(api):
    assert api.put("/resource_classes/CUSTOM_GOLD").status == 201
    assert api.put("/resource_classes/CUSTOM_GOLD_").status == 201
    assert api.put("/traits/CUSTOM_FAST").status == 201
    assert api.put("/traits/CUSTOM_FAST_").status == 201
    traits = api.get("/traits?" + urlencode({"name": "startswith:CUSTOM_FAST"})).json["traits"]
    assert sorted(traits) == ["CUSTOM_FAST", "CUSTOM_FAST_"]


def test_project_ids_differing_in_case_are_different_projects(api):
    rp = api.post("/resource_providers", json={"name": "quota-host"}).json["uuid"]
    gen = api.get(f"/resource_providers/{rp}").json["generation"]
    assert api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": gen,
        "inventories": {"VCPU": {"total": 8}}}).status == 200
    for project in ("Tenant-A", "tenant-a"):
        resp = api.put(f"/allocations/{uuid.uuid4()}", json={
            "allocations": {rp: {"resources": {"VCPU": 1}}},
            "project_id": project, "user_id": USER, "consumer_generation": None},
            version="1.36")
        assert resp.status == 204, resp
    for project in ("Tenant-A", "tenant-a"):
        usages = api.get("/usages?" + urlencode({"project_id": project}),
                         version="1.36").json["usages"]
        assert usages == {"VCPU": 1}, (project, usages)


def test_largest_integers_round_trip(api):
    rp = api.post("/resource_providers", json={"name": "big"}).json["uuid"]
    resp = api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"DISK_GB": {"total": INT32_MAX, "max_unit": INT32_MAX,
                                    "reserved": INT32_MAX - 1, "allocation_ratio": 1.0}}})
    assert resp.status == 200, resp
    inv = api.get(f"/resource_providers/{rp}/inventories/DISK_GB").json
    assert (inv["total"], inv["max_unit"], inv["reserved"]) == (INT32_MAX, INT32_MAX,
                                                              INT32_MAX - 1)
    # One unit is left; taking it fills the provider exactly.
    consumer = str(uuid.uuid4())
    resp = api.put(f"/allocations/{consumer}", json={
        "allocations": {rp: {"resources": {"DISK_GB": 1}}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None},
        version="1.36")
    assert resp.status == 204, resp
    over = api.put(f"/allocations/{uuid.uuid4()}", json={
        "allocations": {rp: {"resources": {"DISK_GB": 1}}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None},
        version="1.36")
    assert over.status == 409, over
    too_big = api.put(f"/resource_providers/{rp}/inventories", json={
        "resource_provider_generation": api.get(f"/resource_providers/{rp}").json["generation"],
        "inventories": {"DISK_GB": {"total": INT32_MAX + 1}}})
    assert too_big.status == 400, too_big
