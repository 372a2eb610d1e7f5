"""Build provider worlds by name through the API and read candidates back by name."""

from __future__ import annotations

import os_resource_classes
import os_traits

from tests.api.test_resource_providers import allocate, create, new_uuid

SHARES = "MISC_SHARES_VIA_AGGREGATE"


class World:
    """Providers known by the names of a drawing; every write goes through HTTP."""

    def __init__(self, api) -> None:
        self.api = api
        self.uuids: dict[str, str] = {}
        self.aggs: dict[str, str] = {}
        self.generations: dict[str, int] = {}

    # -- building ------------------------------------------------------------

    def agg(self, name: str) -> str:
        return self.aggs.setdefault(name, new_uuid())

    def rc(self, name: str) -> str:
        if name in os_resource_classes.STANDARDS:
            return name
        custom = name if name.startswith("CUSTOM_") else f"CUSTOM_{name}"
        assert self.api.put(f"/resource_classes/{custom}").status in (201, 204)
        return custom

    def trait(self, name: str) -> str:
        if name in os_traits.get_traits():
            return name
        custom = name if name.startswith("CUSTOM_") else f"CUSTOM_{name}"
        assert self.api.put(f"/traits/{custom}").status in (201, 204)
        return custom

    def add(self, name: str, *, parent: str | None = None, inv: dict | None = None,
            traits=(), aggs=()) -> str:
        """A provider; ``inv`` values are a total or a full inventory record."""
        uuid = create(self.api, name, parent=self.uuids[parent] if parent else None)
        self.uuids[name] = uuid
        self.generations[name] = 0
        if inv:
            self.set_inventory(name, inv)
        if traits:
            self.set_traits(name, traits)
        if aggs:
            self.set_aggregates(name, aggs)
        return uuid

    def _put(self, name: str, what: str, body: dict) -> dict:
        resp = self.api.put(f"/resource_providers/{self.uuids[name]}/{what}", json={
            "resource_provider_generation": self.generations[name], **body})
        assert resp.status == 200, resp
        self.generations[name] = resp.json["resource_provider_generation"]
        return resp.json

    def set_inventory(self, name: str, inv: dict) -> None:
        self._put(name, "inventories", {"inventories": {
            self.rc(rc): (v if isinstance(v, dict) else {"total": v})
            for rc, v in inv.items()}})

    def set_traits(self, name: str, traits) -> None:
        self._put(name, "traits", {"traits": [self.trait(t) for t in traits]})

    def set_aggregates(self, name: str, aggs) -> None:
        self._put(name, "aggregates", {"aggregates": [self.agg(a) for a in aggs]})

    def use(self, name: str, resources: dict[str, int]) -> str:
        """Allocate ``resources`` on the provider to a new consumer."""
        consumer = allocate(self.api, self.uuids[name], resources)
        self.generations[name] += 1
        return consumer

    # -- reading -------------------------------------------------------------

    def name(self, uuid: str) -> str:
        return {u: n for n, u in self.uuids.items()}[uuid]

    def get(self, query: str, version: str = "latest", status: int = 200):
        resp = self.api.get(f"/allocation_candidates?{query}", version=version)
        assert resp.status == status, resp
        return resp

    def candidates(self, query: str, version: str = "latest") -> list[frozenset]:
        """Each candidate as {(provider name, class, amount)}."""
        body = self.get(query, version).json
        return [self.shape(ar) for ar in body["allocation_requests"]]

    def shape(self, allocation_request: dict) -> frozenset:
        allocations = allocation_request["allocations"]
        if isinstance(allocations, list):  # before 1.12
            pairs = [(a["resource_provider"]["uuid"], a["resources"]) for a in allocations]
        else:
            pairs = [(u, a["resources"]) for u, a in allocations.items()]
        return frozenset((self.name(u), rc, amount)
                         for u, resources in pairs for rc, amount in resources.items())

    def mappings(self, allocation_request: dict) -> dict[str, set[str]]:
        return {suffix: {self.name(u) for u in uuids}
                for suffix, uuids in allocation_request["mappings"].items()}

    def query(self, template: str) -> str:
        """Replace ``{name}`` with the uuid of a provider or aggregate."""
        return template.format(**self.uuids, **self.aggs)


def cand(*parts: tuple) -> frozenset:
    """``cand(("CN1", {"VCPU": 1}), ("SS1", {"DISK_GB": 500}))``."""
    return frozenset((name, rc, amount) for name, res in parts for rc, amount in res.items())
