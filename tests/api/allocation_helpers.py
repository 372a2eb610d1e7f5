"""Providers, inventories and allocation bodies for the allocation tests."""

from __future__ import annotations

import uuid as uuid_mod

PROJECT = "6f2a0f8c-3f6d-4b52-9c55-4f0e5c7f4b10"
USER = "0c6d9d1e-2b4f-4a0e-8d8f-7c1e7f2f6a21"
# The reshaper is for services (nova-compute); admin alone is not enough
# under the current policy defaults.
SERVICE = {"X-Roles": "admin,service"}


def new_uuid() -> str:
    return str(uuid_mod.uuid4())


def _records(inventory: dict) -> dict:
    return {rc: (v if isinstance(v, dict) else {"total": v}) for rc, v in inventory.items()}


def make_provider(api, name: str | None = None, *, parent: str | None = None,
                  uuid: str | None = None, **inventory) -> str:
    """A provider with the given inventory, e.g. ``VCPU=8`` or
    ``DISK_GB={"total": 100, "max_unit": 50}``; returns its UUID."""
    uuid = uuid or new_uuid()
    data = {"name": name or f"rp-{uuid}", "uuid": uuid}
    if parent:
        data["parent_provider_uuid"] = parent
    resp = api.post("/resource_providers", json=data)
    assert resp.status in (200, 201), resp
    if inventory:
        set_inventory(api, uuid, **inventory)
    return uuid


def set_inventory(api, provider_uuid: str, **inventory) -> None:
    resp = api.put(f"/resource_providers/{provider_uuid}/inventories",
                   json={"resource_provider_generation": generation(api, provider_uuid),
                         "inventories": _records(inventory)})
    assert resp.status == 200, resp


def generation(api, provider_uuid: str) -> int:
    resp = api.get(f"/resource_providers/{provider_uuid}")
    assert resp.status == 200, resp
    return resp.json["generation"]


def usages(api, provider_uuid: str) -> dict[str, int]:
    return api.get(f"/resource_providers/{provider_uuid}/usages").json["usages"]


def allocations(api, consumer_uuid: str, version: str = "latest") -> dict:
    resp = api.get(f"/allocations/{consumer_uuid}", version=version)
    assert resp.status == 200, resp
    return resp.json


def body(provider_uuid: str, consumer_generation=None, *, project=PROJECT, user=USER,
         consumer_type: str | None = "INSTANCE", **resources) -> dict:
    """A consumer entry in the dict format, with generation and type (1.38)."""
    data = {"allocations": {provider_uuid: {"resources": resources}},
            "project_id": project, "user_id": user,
            "consumer_generation": consumer_generation}
    if consumer_type is not None:
        data["consumer_type"] = consumer_type
    return data


def claim(api, consumer_uuid: str, provider_uuid: str, **resources):
    """PUT at the latest microversion for a new consumer."""
    return api.put(f"/allocations/{consumer_uuid}", json=body(provider_uuid, **resources))
