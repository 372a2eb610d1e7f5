"""POST /reshaper (1.30): inventories and allocations move together or not at all.

The central scenario is the provider-tree reshape: a compute node that
reported VGPU inventory itself gets one child provider per physical GPU, and
the VGPU inventory and the live allocations of its instances move onto the
children in one request.
"""

from __future__ import annotations

import pytest

from allotment.service import reshaper as reshaper_service
from tests.api.allocation_helpers import (
    PROJECT,
    SERVICE,
    USER,
    allocations,
    claim,
    generation,
    make_provider,
    new_uuid,
    usages,
)


def reshape(api, data, version="latest", **kw):
    return api.post("/reshaper", json=data, version=version, headers=SERVICE, **kw)


def entry(consumer_generation, consumer_type="INSTANCE", **by_provider):
    data = {"allocations": {rp: {"resources": res} for rp, res in by_provider.items()},
            "project_id": PROJECT, "user_id": USER,
            "consumer_generation": consumer_generation}
    if consumer_type is not None:
        data["consumer_type"] = consumer_type
    return data


class VgpuHost:
    """A compute node with VCPU and 4 VGPU, two instances using 1 and 2 VGPU,
    and two empty GPU children."""

    def __init__(self, api):
        self.api = api
        self.root = make_provider(api, "compute", VCPU=8, MEMORY_MB=4096, VGPU=4)
        self.gpu1 = make_provider(api, "compute_pgpu1", parent=self.root)
        self.gpu2 = make_provider(api, "compute_pgpu2", parent=self.root)
        self.vm1, self.vm2 = new_uuid(), new_uuid()
        assert claim(api, self.vm1, self.root, VCPU=2, MEMORY_MB=1024, VGPU=1).status == 204
        assert claim(api, self.vm2, self.root, VCPU=1, MEMORY_MB=512, VGPU=2).status == 204

    def move(self, *, root_generation=None, vm2_generation=1, gpu2_vgpu=2):
        """The reshape request moving VGPU to the children."""
        gen = generation(self.api, self.root) if root_generation is None else root_generation
        return {
            "inventories": {
                self.root: {"resource_provider_generation": gen,
                            "inventories": {"VCPU": {"total": 8},
                                            "MEMORY_MB": {"total": 4096}}},
                self.gpu1: {"resource_provider_generation": 0,
                            "inventories": {"VGPU": {"total": 2}}},
                self.gpu2: {"resource_provider_generation": 0,
                            "inventories": {"VGPU": {"total": gpu2_vgpu}}},
            },
            "allocations": {
                self.vm1: entry(1, **{self.root: {"VCPU": 2, "MEMORY_MB": 1024},
                                      self.gpu1: {"VGPU": 1}}),
                self.vm2: entry(vm2_generation, **{self.root: {"VCPU": 1, "MEMORY_MB": 512},
                                                   self.gpu2: {"VGPU": 2}}),
            },
        }

    def state(self):
        """Everything a reshape could change, as the API reports it."""
        api = self.api
        return {
            "inventories": {rp: api.get(f"/resource_providers/{rp}/inventories").json
                            for rp in (self.root, self.gpu1, self.gpu2)},
            "usages": {rp: usages(api, rp) for rp in (self.root, self.gpu1, self.gpu2)},
            "allocations": {c: allocations(api, c) for c in (self.vm1, self.vm2)},
        }


@pytest.fixture
def host(api):
    return VgpuHost(api)


def test_vgpu_move_to_gpu_children(api, host):
    before = generation(api, host.root)
    resp = reshape(api, host.move())
    assert resp.status == 204 and resp.text == ""

    assert usages(api, host.root) == {"VCPU": 3, "MEMORY_MB": 1536}
    assert usages(api, host.gpu1) == {"VGPU": 1}
    assert usages(api, host.gpu2) == {"VGPU": 2}
    inv = api.get(f"/resource_providers/{host.root}/inventories").json["inventories"]
    assert set(inv) == {"VCPU", "MEMORY_MB"}

    vm1 = allocations(api, host.vm1)
    assert vm1["consumer_generation"] == 2
    assert {rp: a["resources"] for rp, a in vm1["allocations"].items()} == {
        host.root: {"VCPU": 2, "MEMORY_MB": 1024}, host.gpu1: {"VGPU": 1}}
    # One generation step each for the interim inventory, the allocations and
    # the final inventory.
    assert generation(api, host.root) == before + 3
    assert generation(api, host.gpu1) == 3


def test_failure_half_way_leaves_everything_as_it_was(api, host):
    """The last step (final inventories) fails after the interim inventories
    and the allocations were written: all of it is rolled back."""
    before = host.state()
    gens = [generation(api, rp) for rp in (host.root, host.gpu1, host.gpu2)]
    data = host.move()
    # vm2 keeps its VGPU on the root, whose final inventory drops VGPU.
    data["allocations"][host.vm2] = entry(1, **{host.root: {"VCPU": 1, "MEMORY_MB": 512,
                                                             "VGPU": 2}})
    resp = reshape(api, data)
    assert resp.status == 409
    assert resp.error()["code"] == "placement.inventory.inuse"
    assert "update conflict: Inventory for 'VGPU' on resource provider" in \
        resp.error()["detail"]
    assert host.state() == before
    assert [generation(api, rp) for rp in (host.root, host.gpu1, host.gpu2)] == gens


def test_unexpected_failure_half_way_rolls_back(api, host, monkeypatch):
    before = host.state()
    real = reshaper_service._replace_inventory
    calls = []

    def failing(conn, provider_uuid, records):
        calls.append(provider_uuid)
        if len(calls) == 4:  # the first final inventory, after the allocations
            raise RuntimeError("disk on fire")
        return real(conn, provider_uuid, records)

    monkeypatch.setattr(reshaper_service, "_replace_inventory", failing)
    resp = reshape(api, host.move())
    assert resp.status == 500
    monkeypatch.setattr(reshaper_service, "_replace_inventory", real)
    assert host.state() == before
    # And the same request still works afterwards.
    assert reshape(api, host.move()).status == 204


def test_provider_generation_conflict(api, host):
    before = host.state()
    gen = generation(api, host.root)
    resp = reshape(api, host.move(root_generation=gen - 1))
    assert resp.status == 409
    error = resp.error()
    assert error["code"] == "placement.concurrent_update"
    assert (f"resource provider generation conflict for provider {host.root}: "
            f"actual: {gen}, given: {gen - 1}" in error["detail"])
    assert host.state() == before


def test_consumer_generation_conflict(api, host):
    before = host.state()
    resp = reshape(api, host.move(vm2_generation=99))
    assert resp.status == 409
    assert resp.error()["code"] == "placement.concurrent_update"
    assert "consumer generation conflict - expected 1 but got 99" in resp.error()["detail"]
    assert host.state() == before


def test_unknown_provider_in_inventories(api, host):
    data = host.move()
    data["inventories"][new_uuid()] = {"resource_provider_generation": 0,
                                       "inventories": {"VCPU": {"total": 1}}}
    resp = reshape(api, data)
    assert resp.status == 400
    assert resp.error()["code"] == "placement.resource_provider.not_found"


def test_unknown_resource_class(api, host):
    before = host.state()
    data = host.move()
    data["inventories"][host.gpu1]["inventories"] = {"DISK_OF_STEEL": {"total": 2}}
    resp = reshape(api, data)
    assert resp.status == 400
    assert "No such resource class DISK_OF_STEEL" in resp.error()["detail"]
    assert host.state() == before


@pytest.mark.parametrize("record", [{}, {"reserved": 1}])
def test_incomplete_record_under_a_name_no_class_can_have(api, host, record):
    before = host.state()
    data = host.move()
    data["inventories"][host.gpu1]["inventories"]["not_a_class"] = record
    resp = reshape(api, data)
    assert resp.status == 400
    assert "'total' is a required property" in resp.error()["detail"]
    assert host.state() == before


def test_final_state_is_checked_against_capacity(api, host):
    """The GPU children would hold 3 VGPU with room for 1 on the second."""
    before = host.state()
    resp = reshape(api, host.move(gpu2_vgpu=1))
    assert resp.status == 409
    assert "Unable to allocate inventory" in resp.error()["detail"]
    assert "would exceed the capacity" in resp.error()["detail"]
    assert host.state() == before


def test_constraints_of_new_inventory(api, host):
    data = host.move()
    data["inventories"][host.gpu2]["inventories"]["VGPU"]["max_unit"] = 1
    resp = reshape(api, data)
    assert resp.status == 409
    assert "would violate inventory constraints" in resp.error()["detail"]


def test_removing_allocated_inventory_without_moving_allocations(api, host):
    data = {"inventories": {host.root: {"resource_provider_generation":
                                        generation(api, host.root),
                                        "inventories": {"VCPU": {"total": 8}}}},
            "allocations": {}}
    resp = reshape(api, data)
    assert resp.status == 409
    assert resp.error()["code"] == "placement.inventory.inuse"


def test_consolidate_with_new_and_emptied_consumers(api, host):
    """Move back, under new consumers, emptying an old one."""
    assert reshape(api, host.move()).status == 204
    vm3 = new_uuid()
    data = {
        "inventories": {
            host.root: {"resource_provider_generation": generation(api, host.root),
                        "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096},
                                        "VGPU": {"total": 4}}},
            host.gpu1: {"resource_provider_generation": generation(api, host.gpu1),
                        "inventories": {}},
            host.gpu2: {"resource_provider_generation": generation(api, host.gpu2),
                        "inventories": {}},
        },
        "allocations": {
            host.vm1: entry(2, **{host.root: {"VCPU": 2, "MEMORY_MB": 1024, "VGPU": 1}}),
            host.vm2: {"allocations": {}, "project_id": PROJECT, "user_id": USER,
                       "consumer_generation": 2, "consumer_type": "INSTANCE"},
            vm3: entry(None, consumer_type="RESHAPED",
                       **{host.root: {"VCPU": 1, "MEMORY_MB": 512, "VGPU": 2}}),
        },
    }
    assert reshape(api, data).status == 204
    assert usages(api, host.root) == {"VCPU": 3, "MEMORY_MB": 1536, "VGPU": 3}
    assert usages(api, host.gpu1) == {} and usages(api, host.gpu2) == {}
    assert allocations(api, host.vm2) == {"allocations": {}}
    assert allocations(api, vm3)["consumer_type"] == "RESHAPED"


def test_no_allocations_at_all(api):
    rp = make_provider(api, VCPU=4)
    data = {"inventories": {rp: {"resource_provider_generation": generation(api, rp),
                                 "inventories": {"VCPU": {"total": 6}}}},
            "allocations": {}}
    assert reshape(api, data).status == 204
    inv = api.get(f"/resource_providers/{rp}/inventories").json["inventories"]
    assert inv["VCPU"]["total"] == 6


@pytest.mark.parametrize("version,mutate,fragment", [
    ("1.30", lambda d, h: d.clear() or d.update(cows="moo"), "JSON does not validate"),
    ("1.30", lambda d, h: d.pop("allocations"), "'allocations' is a required property"),
    ("1.30", lambda d, h: d.update(inventories={}), "should be non-empty"),
    ("1.38", lambda d, h: d["inventories"][h.root]["inventories"]["VCPU"].update(
        bad_field="moo"), "'bad_field' was unexpected"),
    ("1.38", lambda d, h: d["allocations"][h.vm1].update(bad_field="moo"),
     "'bad_field' was unexpected"),
    ("1.38", lambda d, h: d["allocations"][h.vm1].pop("consumer_generation"),
     "'consumer_generation' is a required property"),
    ("1.33", lambda d, h: d["allocations"][h.vm1].update(mappings={"": [h.root]}),
     "Additional properties are not allowed"),
    ("1.37", lambda d, h: None, "'consumer_type' was unexpected"),
    ("1.38", lambda d, h: d["allocations"][h.vm1].pop("consumer_type"),
     "'consumer_type' is a required property"),
])
def test_schema(api, host, version, mutate, fragment):
    data = host.move()
    mutate(data, host)
    resp = reshape(api, data, version=version)
    assert resp.status == 400
    assert fragment in resp.error()["detail"]


def test_mappings_accepted_from_1_34(api, host):
    data = host.move()
    for consumer in data["allocations"].values():
        consumer.pop("consumer_type")
    data["allocations"][host.vm1]["mappings"] = {"": [host.root]}
    assert reshape(api, data, version="1.34").status == 204


def test_not_before_1_30(api, host):
    assert reshape(api, host.move(), version="1.29").status == 404


def test_post_only(api):
    resp = api.get("/reshaper", headers=SERVICE)
    assert resp.status == 405
    assert resp.headers["allow"] == "POST"


def test_needs_service_permission(api, host):
    assert api.post("/reshaper", json=host.move(), token="user").status == 403
