"""Providers and inventories for the allocation tests, written through storage.

The allocation tests need providers with inventory; building them through
storage keeps these tests independent of the provider endpoints' details.
"""

from __future__ import annotations

import uuid as uuid_mod

import sqlalchemy as sa

from allotment.storage import inventories, resource_providers, tables

PROJECT = "6f2a0f8c-3f6d-4b52-9c55-4f0e5c7f4b10"
USER = "0c6d9d1e-2b4f-4a0e-8d8f-7c1e7f2f6a21"


def new_uuid() -> str:
    return str(uuid_mod.uuid4())


def make_provider(db, name: str | None = None, *, parent: str | None = None,
                  uuid: str | None = None, **inventory) -> str:
    """A provider with the given inventory, e.g. ``VCPU=8`` or
    ``DISK_GB={"total": 100, "max_unit": 50}``; returns its UUID."""
    uuid = uuid or new_uuid()
    with db.write() as conn:
        parent_row = resource_providers.get_by_uuid(conn, parent) if parent else None
        row = resource_providers.create(conn, uuid=uuid, name=name or f"rp-{uuid}",
                                        parent=parent_row)
        if inventory:
            records = {rc: (v if isinstance(v, dict) else {"total": v})
                       for rc, v in inventory.items()}
            inventories.replace_all(conn, row, records)
    return uuid


def set_inventory(db, provider_uuid: str, **inventory) -> None:
    with db.write() as conn:
        row = resource_providers.get_by_uuid(conn, provider_uuid)
        records = {rc: (v if isinstance(v, dict) else {"total": v})
                   for rc, v in inventory.items()}
        inventories.replace_all(conn, row, records)


def generation(db, provider_uuid: str) -> int:
    with db.read() as conn:
        return resource_providers.get_by_uuid(conn, provider_uuid).generation


def usage(db, provider_uuid: str) -> dict[str, int]:
    """Sum of allocations per class on one provider, straight from the table."""
    a, rc, rp = tables.allocations, tables.resource_classes, tables.resource_providers
    with db.read() as conn:
        rows = conn.execute(
            sa.select(rc.c.name, sa.func.sum(a.c.used))
            .select_from(a.join(rc, rc.c.id == a.c.resource_class_id)
                         .join(rp, rp.c.id == a.c.resource_provider_id))
            .where(rp.c.uuid == provider_uuid).group_by(rc.c.name))
        return {name: int(used) for name, used in rows}


def consumer_count(db) -> int:
    with db.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(tables.consumers)).scalar()


def body(provider_uuid: str, consumer_generation=None, *, project=PROJECT, user=USER,
         consumer_type: str | None = None, **resources) -> dict:
    """A PUT body in the dict format (1.28+ when consumer_generation is used)."""
    data = {"allocations": {provider_uuid: {"resources": resources}},
            "project_id": project, "user_id": user,
            "consumer_generation": consumer_generation}
    if consumer_type is not None:
        data["consumer_type"] = consumer_type
    return data
