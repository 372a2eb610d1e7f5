"""POST /allocations (1.13): many consumers in one all-or-nothing write."""

from __future__ import annotations

import pytest

from tests.api.allocation_helpers import (
    PROJECT,
    USER,
    allocations,
    body,
    claim,
    generation,
    make_provider,
    new_uuid,
    usages,
)


@pytest.fixture
def rp(api):
    return make_provider(api, VCPU=8, MEMORY_MB=4096)


def entry(rp_uuid, **resources):
    """A consumer entry at 1.13 (no generation, no type)."""
    return {"allocations": {rp_uuid: {"resources": resources}},
            "project_id": PROJECT, "user_id": USER}


def test_not_before_1_13(api, rp):
    resp = api.post("/allocations", json={new_uuid(): entry(rp, VCPU=1)}, version="1.12")
    assert resp.status == 404


def test_two_consumers_at_once(api, rp):
    a, b = new_uuid(), new_uuid()
    resp = api.post("/allocations", json={a: entry(rp, VCPU=1), b: entry(rp, VCPU=2)},
                    version="1.13")
    assert resp.status == 204 and resp.text == ""
    assert allocations(api, a)["allocations"][rp]["resources"] == {"VCPU": 1}
    assert allocations(api, b)["allocations"][rp]["resources"] == {"VCPU": 2}
    assert usages(api, rp)["VCPU"] == 3


def test_all_or_nothing(api, rp):
    a, b = new_uuid(), new_uuid()
    gen = generation(api, rp)
    resp = api.post("/allocations", json={a: entry(rp, VCPU=1), b: entry(rp, VCPU=9)},
                    version="1.13")
    assert resp.status == 409
    assert "The requested amount would exceed the capacity" in resp.error()["detail"]
    assert allocations(api, a) == {"allocations": {}}
    assert usages(api, rp)["VCPU"] == 0
    assert generation(api, rp) == gen


def test_capacity_counts_every_consumer_of_the_request(api, rp):
    a, b = new_uuid(), new_uuid()
    resp = api.post("/allocations", json={a: entry(rp, VCPU=5), b: entry(rp, VCPU=4)},
                    version="1.13")
    assert resp.status == 409
    assert usages(api, rp)["VCPU"] == 0


def test_migration_moves_allocations_between_consumers(api, rp):
    """The move pattern: the instance's claim becomes the migration's, and the
    instance claims on the destination, in one request."""
    dest = make_provider(api, VCPU=8, MEMORY_MB=4096)
    instance, migration = new_uuid(), new_uuid()
    assert claim(api, instance, rp, VCPU=6, MEMORY_MB=2048).status == 204
    data = {
        migration: {**body(rp, None, consumer_type="MIGRATION", VCPU=6, MEMORY_MB=2048)},
        instance: {**body(dest, 1, VCPU=6, MEMORY_MB=2048)},
    }
    assert api.post("/allocations", json=data).status == 204
    assert usages(api, rp) == {"VCPU": 6, "MEMORY_MB": 2048}
    assert usages(api, dest) == {"VCPU": 6, "MEMORY_MB": 2048}
    assert list(allocations(api, migration)["allocations"]) == [rp]
    assert allocations(api, migration)["consumer_type"] == "MIGRATION"
    assert list(allocations(api, instance)["allocations"]) == [dest]

    # Confirming the move: the migration lets go, in the same kind of request.
    data = {migration: {"allocations": {}, "project_id": PROJECT, "user_id": USER,
                        "consumer_generation": 1, "consumer_type": "MIGRATION"}}
    assert api.post("/allocations", json=data).status == 204
    assert usages(api, rp) == {"VCPU": 0, "MEMORY_MB": 0}
    assert allocations(api, migration) == {"allocations": {}}


def test_swapping_allocations_on_a_full_provider(api):
    """Capacity is checked after both consumers let go of what they held."""
    rp = make_provider(api, VCPU=4)
    a, b = new_uuid(), new_uuid()
    assert claim(api, a, rp, VCPU=4).status == 204
    data = {a: body(rp, 1, VCPU=1), b: body(rp, None, VCPU=3)}
    assert api.post("/allocations", json=data).status == 204
    assert usages(api, rp)["VCPU"] == 4


def test_empty_allocations_delete(api, rp):
    a, b = new_uuid(), new_uuid()
    assert claim(api, a, rp, VCPU=2).status == 204
    data = {a: {"allocations": {}, "project_id": PROJECT, "user_id": USER},
            b: entry(rp, VCPU=1)}
    assert api.post("/allocations", json=data, version="1.13").status == 204
    assert allocations(api, a) == {"allocations": {}}
    assert usages(api, rp)["VCPU"] == 1


@pytest.mark.parametrize("version,data,status,fragment", [
    ("1.13", {}, 400, "should be non-empty"),
    ("1.13", {"not-a-uuid": {}}, 400, "does not match any of the regexes"),
    ("1.13", {"0b3dc0b2-6b47-4a31-a5a5-ff0af9a4e2b4": {"cow": "moo"}}, 400,
     "JSON does not validate"),
])
def test_schema(api, version, data, status, fragment):
    resp = api.post("/allocations", json=data, version=version)
    assert resp.status == status
    assert fragment in resp.error()["detail"]


def test_generation_required_from_1_28(api, rp):
    resp = api.post("/allocations", json={new_uuid(): entry(rp, VCPU=1)}, version="1.28")
    assert resp.status == 400
    assert "'consumer_generation' is a required property" in resp.error()["detail"]


def test_generation_conflict_of_one_consumer_fails_all(api, rp):
    a, b = new_uuid(), new_uuid()
    assert claim(api, a, rp, VCPU=1).status == 204
    data = {b: body(rp, None, VCPU=1), a: body(rp, 3, VCPU=2)}
    resp = api.post("/allocations", json=data)
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected 1 but got 3" in resp.error()["detail"]
    assert allocations(api, b) == {"allocations": {}}
    assert usages(api, rp)["VCPU"] == 1


def test_type_required_from_1_38(api, rp):
    resp = api.post("/allocations", json={new_uuid(): body(rp, consumer_type=None, VCPU=1)})
    assert resp.status == 400
    assert "'consumer_type' is a required property" in resp.error()["detail"]


def test_mappings_from_1_34(api, rp):
    data = body(rp, consumer_type=None, VCPU=1)
    data["mappings"] = {"": [rp]}
    assert api.post("/allocations", json={new_uuid(): data}, version="1.34").status == 204
    resp = api.post("/allocations", json={new_uuid(): data}, version="1.33")
    assert resp.status == 400
    assert "Additional properties are not allowed" in resp.error()["detail"]


def test_missing_provider(api, rp):
    missing = new_uuid()
    resp = api.post("/allocations", json={new_uuid(): entry(missing, VCPU=1)},
                    version="1.13")
    assert resp.status == 400
    assert "that does not exist" in resp.error()["detail"]


def test_missing_inventory_and_class(api, rp):
    resp = api.post("/allocations", json={new_uuid(): entry(rp, PCI_DEVICE=1)},
                    version="1.13")
    assert resp.status == 409
    assert "Inventory for 'PCI_DEVICE' on" in resp.error()["detail"]
    resp = api.post("/allocations", json={new_uuid(): entry(rp, CUSTOM_PONY=1)},
                    version="1.13")
    assert resp.status == 400
    assert "Unable to allocate inventory No such resource class CUSTOM_PONY" in \
        resp.error()["detail"]


def test_needs_permission(api, rp):
    resp = api.post("/allocations", json={new_uuid(): entry(rp, VCPU=1)}, token="someone")
    assert resp.status == 403


def test_get_is_405(api):
    resp = api.get("/allocations")
    assert resp.status == 405
    assert resp.headers["allow"] == "POST"
