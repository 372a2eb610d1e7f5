"""Writes a fixture's providers, inventories, traits, aggregates and
allocations through allotment's HTTP API, as an operator's tools would.

Generations move exactly as when the same things are written by upstream's
objects: aggregates are set at 1.1 (which does not bump a provider's
generation, like upstream's object call), everything else as usual.
"""

from __future__ import annotations

import uuid

import requests

ADMIN = {"X-Auth-Token": "admin"}


class Builder:
    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()

    def _call(self, method: str, path: str, body: object = None, version: str = "1.28",
              ok: tuple[int, ...] = (200, 201, 204)) -> requests.Response:
        resp = self.session.request(
            method, self.url + path, json=body, timeout=60,
            headers={**ADMIN, "OpenStack-API-Version": f"placement {version}"})
        if resp.status_code not in ok:
            raise RuntimeError(f"fixture {method} {path} {body!r}: "
                               f"{resp.status_code} {resp.text[:500]}")
        return resp

    def _generation(self, rp: str) -> int:
        return self._call("GET", f"/resource_providers/{rp}").json()["generation"]

    def resource_class(self, name: str) -> None:
        self._call("PUT", f"/resource_classes/{name}", version="1.7")

    def trait(self, name: str) -> None:
        self._call("PUT", f"/traits/{name}", version="1.6")

    def provider(self, name: str, *aggregates: str, parent: str | None = None) -> str:
        rp = str(uuid.uuid4())
        body = {"name": name, "uuid": rp}
        if parent:
            body["parent_provider_uuid"] = parent
        self._call("POST", "/resource_providers", body, version="1.20")
        if aggregates:
            self.aggregates(rp, *aggregates)
        return rp

    def aggregates(self, rp: str, *aggregates: str) -> None:
        self._call("PUT", f"/resource_providers/{rp}/aggregates", list(aggregates),
                   version="1.1")

    def inventory(self, rp: str, rc: str, total: int, **fields: object) -> None:
        if rc.startswith("CUSTOM_"):
            self.resource_class(rc)
        fields.setdefault("max_unit", total)
        self._call("POST", f"/resource_providers/{rp}/inventories", {
            "resource_class": rc, "total": total, **fields,
            "resource_provider_generation": self._generation(rp)})

    def traits(self, rp: str, *names: str) -> None:
        for name in names:
            if name.startswith("CUSTOM_"):
                self.trait(name)
        self._call("PUT", f"/resource_providers/{rp}/traits", {
            "traits": list(names), "resource_provider_generation": self._generation(rp)})

    def allocate(self, rp: str, consumer: str, user: str, project: str,
                 resources: dict[str, int]) -> None:
        self._call("PUT", f"/allocations/{consumer}", {
            "allocations": {rp: {"resources": resources}},
            "project_id": project, "user_id": user, "consumer_generation": None})
