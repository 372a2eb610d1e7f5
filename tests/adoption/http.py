"""A small Placement client over HTTP for building and changing worlds.

Works the same against upstream Placement and allotment: every write reads
the provider's current generation first, so a world can be written through
either service, or both in turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import requests

WRITE_VERSION = "1.39"


class WriteFailed(AssertionError):
    pass


@dataclass
class Api:
    url: str
    session: requests.Session = field(default_factory=requests.Session)

    def call(self, method: str, path: str, body: object = None, *,
             version: str = WRITE_VERSION) -> requests.Response:
        return self.session.request(
            method, self.url + path, json=body, timeout=120,
            headers={"X-Auth-Token": "admin", "Accept": "application/json",
                     "OpenStack-API-Version": f"placement {version}"})

    def ok(self, method: str, path: str, body: object = None, *,
           version: str = WRITE_VERSION) -> object:
        resp = self.call(method, path, body, version=version)
        if resp.status_code >= 300:
            raise WriteFailed(f"{method} {path} {body!r} -> {resp.status_code} {resp.text}")
        return resp.json() if resp.content else None

    # -- providers -----------------------------------------------------------

    def generation(self, rp: str) -> int:
        return self.ok("GET", f"/resource_providers/{rp}")["generation"]

    def provider(self, rp: str, name: str, parent: str | None = None) -> None:
        body = {"uuid": rp, "name": name}
        if parent:
            body["parent_provider_uuid"] = parent
        self.ok("POST", "/resource_providers", body)

    def rename(self, rp: str, name: str) -> None:
        current = self.ok("GET", f"/resource_providers/{rp}")
        body = {"name": name}
        if current.get("parent_provider_uuid"):
            body["parent_provider_uuid"] = current["parent_provider_uuid"]
        self.ok("PUT", f"/resource_providers/{rp}", body)

    def inventories(self, rp: str, inventories: dict[str, dict]) -> None:
        self.ok("PUT", f"/resource_providers/{rp}/inventories",
                {"resource_provider_generation": self.generation(rp),
                 "inventories": inventories})

    def traits(self, rp: str, traits: list[str]) -> None:
        self.ok("PUT", f"/resource_providers/{rp}/traits",
                {"resource_provider_generation": self.generation(rp), "traits": traits})

    def aggregates(self, rp: str, aggregates: list[str]) -> None:
        self.ok("PUT", f"/resource_providers/{rp}/aggregates",
                {"resource_provider_generation": self.generation(rp),
                 "aggregates": aggregates})

    # -- names ---------------------------------------------------------------

    def resource_class(self, name: str) -> None:
        self.ok("PUT", f"/resource_classes/{name}")

    def trait(self, name: str) -> None:
        self.ok("PUT", f"/traits/{name}")

    # -- consumers -----------------------------------------------------------

    def consumer_generation(self, consumer: str) -> int | None:
        return self.ok("GET", f"/allocations/{consumer}").get("consumer_generation")

    def allocate(self, consumer: str, allocations: dict[str, dict[str, int]], *,
                 project: str, user: str, consumer_type: str | None = "INSTANCE") -> None:
        body = {"allocations": {rp: {"resources": res} for rp, res in allocations.items()},
                "project_id": project, "user_id": user,
                "consumer_generation": self.consumer_generation(consumer)}
        if consumer_type:
            body["consumer_type"] = consumer_type
        self.ok("PUT", f"/allocations/{consumer}", body)
