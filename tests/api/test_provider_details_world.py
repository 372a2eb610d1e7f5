"""A provider's traits, aggregates and inventories, as nova's resource
tracker reads them every few minutes (traits at 1.6, aggregates at 1.19,
inventories at 1.0), come from the process's world: no statement reads the
tables, and the answer is the one the tables give."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allotment.service import aggregates as aggregate_service
from allotment.service import inventories as inventory_service
from allotment.service import provider_traits as trait_service
from allotment.storage.inventories import FIELDS
from tests.api.test_resource_providers import create, new_uuid
from tests.harness.statements import recording

AGGREGATES = sorted([new_uuid(), new_uuid(), new_uuid()])
# Custom names an underscore-ignoring collation orders differently from
# Python's sort: the answer keeps the database's order.
TRAITS = ["CUSTOM_A_B", "CUSTOM_AB", "CUSTOM_A_C", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"]


@pytest.fixture
def rp(api) -> str:
    uuid = create(api, "rp")
    for name in TRAITS:
        if name.startswith("CUSTOM_"):
            assert api.put(f"/traits/{name}").status in (201, 204)
    assert api.put(f"/resource_providers/{uuid}/traits", json={
        "traits": TRAITS, "resource_provider_generation": 0}).status == 200
    assert api.put(f"/resource_providers/{uuid}/aggregates", json={
        "aggregates": AGGREGATES, "resource_provider_generation": 1}).status == 200
    assert api.put(f"/resource_providers/{uuid}/inventories", json={
        "resource_provider_generation": 2, "inventories": {
            "VCPU": {"total": 16, "allocation_ratio": 1.5, "max_unit": 8},
            "MEMORY_MB": {"total": 4096, "reserved": 512, "step_size": 256},
            "DISK_GB": {"total": 100, "min_unit": 5}}}).status == 200
    return uuid


@pytest.fixture
def statements(db) -> Iterator[list[str]]:
    """Every statement the service's engine sends while the test runs."""
    with recording(db.engine) as sent:
        yield sent


READS = [("traits", "1.6"), ("aggregates", "1.19"), ("aggregates", "1.1"),
         ("inventories", "1.0"), ("inventories", "1.14")]


@pytest.mark.parametrize(("what", "version"), READS)
def test_read_from_the_world_without_reading_the_tables(api, rp, statements, what, version):
    url = f"/resource_providers/{rp}/{what}"
    assert api.get(url, version=version).status == 200  # the world caught up
    statements.clear()
    resp = api.get(url, version=version)
    assert resp.status == 200
    tables = ("resource_providers", "resource_provider_traits", "inventories",
              "resource_provider_aggregates", "placement_aggregates")
    assert [s for s in statements if any(t in s for t in tables)] == []


def test_the_same_answer_as_the_tables(api, rp, db):
    """What the world answers is what the tables say (read here directly)."""
    provider, rows = trait_service.get_traits(db, rp)
    traits = api.get(f"/resource_providers/{rp}/traits", version="1.6")
    assert traits.json == {"traits": [r.name for r in rows],
                           "resource_provider_generation": provider.generation}
    assert sorted(traits.json["traits"]) == sorted(TRAITS)
    assert "last-modified" not in traits.headers

    provider, aggregates = aggregate_service.get_aggregates(db, rp)
    assert api.get(f"/resource_providers/{rp}/aggregates", version="1.19").json == {
        "aggregates": aggregates, "resource_provider_generation": provider.generation}
    assert aggregates == AGGREGATES

    provider, rows = inventory_service.list_inventories(db, rp)
    inventories = api.get(f"/resource_providers/{rp}/inventories", version="1.0")
    assert inventories.json == {
        "resource_provider_generation": provider.generation,
        "inventories": {name: {f: getattr(row, f) for f in FIELDS}
                        for name, row in rows.items()}}
    assert list(inventories.json["inventories"]) == ["VCPU", "MEMORY_MB", "DISK_GB"]
    assert inventories.json["inventories"]["VCPU"] == {
        "total": 16, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
        "allocation_ratio": 1.5}
    assert "last-modified" not in inventories.headers
    # From 1.15 they come with a Last-Modified, which only the tables know.
    assert "last-modified" in api.get(f"/resource_providers/{rp}/traits",
                                      version="1.15").headers


def test_a_write_is_seen_by_the_next_read(api, rp):
    url = f"/resource_providers/{rp}/traits"
    assert api.get(url, version="1.6").json["resource_provider_generation"] == 3
    assert api.put(url, json={"traits": ["HW_CPU_X86_SSE"],
                              "resource_provider_generation": 3}).status == 200
    assert api.get(url, version="1.6").json == {
        "traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 4}
    aggregates = api.get(f"/resource_providers/{rp}/aggregates", version="1.19").json
    assert aggregates == {"aggregates": AGGREGATES, "resource_provider_generation": 4}
    inventories = f"/resource_providers/{rp}/inventories"
    assert api.delete(inventories).status == 204
    assert api.get(inventories, version="1.0").json == {
        "resource_provider_generation": 5, "inventories": {}}


@pytest.mark.parametrize(("what", "version"), [
    ("traits", "1.6"), ("aggregates", "1.19"), ("inventories", "1.0")])
def test_an_unknown_provider_is_still_404(api, what, version):
    uuid = new_uuid()
    resp = api.get(f"/resource_providers/{uuid}/{what}", version=version)
    assert resp.status == 404
    assert uuid in resp.error()["detail"]
