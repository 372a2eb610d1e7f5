"""Helpers for the client integration tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from allotment.client import PlacementClient, Response


def new_uuid() -> str:
    return str(uuid.uuid4())


class Recording:
    """Wraps a transport: records (method, path, status) and can run a hook
    before a request is sent (to stage a concurrent change)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[tuple[str, str, int]] = []
        self.before: Callable[[str, str], None] | None = None

    def request(self, method, path, **kw) -> Response:
        if self.before is not None:
            self.before(method, path)
        resp = self.inner.request(method, path, **kw)
        self.log.append((method, path, resp.status))
        return resp

    def writes(self) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if entry[0] != "GET"]

    def close(self) -> None:
        self.inner.close()


def recorded(client: PlacementClient) -> Recording:
    rec = Recording(client.transport)
    client.transport = rec
    return rec


def make_sharing_provider(client: PlacementClient, name: str, aggregate: str,
                          inventory: dict) -> str:
    rp = client.providers.create(name)
    gen = client.inventories.set(rp.uuid, inventory, rp.generation).resource_provider_generation
    gen = client.aggregates.set(rp.uuid, [aggregate], gen).resource_provider_generation
    client.provider_traits.set(rp.uuid, ["MISC_SHARES_VIA_AGGREGATE"], gen)
    return rp.uuid
