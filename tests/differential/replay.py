"""Replay operations from :mod:`tests.differential.ops` against a service.

The same operations give the same requests (same UUIDs, same bodies) on
every service, so their answers can be compared one for one.  A replay also
records each request as a ``curl`` line, which is how a shrunk difference is
reported.
"""

from __future__ import annotations

import itertools
import json
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

import requests

from tests.differential import ops as O

_NS = uuid.UUID("3f9a3c52-8f0e-4c8e-9d51-2b3c4d5e6f70")
AGGREGATE_UUIDS = {name: str(uuid.uuid5(_NS, f"aggregate-{name}")) for name in O.AGGREGATES}
WRITE_VERSION = "1.39"
COMPARED_HEADERS = ("location", "content-type", "cache-control", "last-modified",
                    "openstack-api-version", "vary", "allow")


@dataclass
class Exchange:
    """One request and the answer a service gave it."""

    method: str
    path: str
    version: str
    body: object
    status: int
    answer: object

    roles: str | None = None
    # The headers compared (see compare.header_difference), the service's
    # own address in them replaced by $URL; and the reason phrase.
    headers: dict[str, str] = field(default_factory=dict)
    reason: str = ""

    def curl(self) -> str:
        data = ("" if self.body is None else
                f" -H 'content-type: application/json' -d '{json.dumps(self.body)}'")
        role = f" -H 'x-roles: {self.roles}'" if self.roles else ""
        return (f"curl -s -X {self.method} -H 'x-auth-token: admin'{role} "
                f"-H 'openstack-api-version: placement {self.version}'{data} "
                f"\"$URL\"'{self.path}'")


@dataclass
class Replay:
    """Drives one service through a scenario; ``run`` is the namespace of
    this replay's UUIDs (so replays on one server never meet)."""

    url: str
    run: str
    session: requests.Session = field(default_factory=requests.Session)
    providers: list[str] = field(default_factory=list)
    parents: dict[str, str | None] = field(default_factory=dict)
    sharing: set[str] = field(default_factory=set)
    consumers: list[str] = field(default_factory=list)
    log: list[Exchange] = field(default_factory=list)

    # -- HTTP ------------------------------------------------------------------

    def call(self, method: str, path: str, body: object = None,
             version: str = WRITE_VERSION, roles: str | None = None) -> Exchange:
        headers = {"X-Auth-Token": "admin",
                   "OpenStack-API-Version": f"placement {version}",
                   "Accept": "application/json"}
        if roles:
            headers["X-Roles"] = roles
        resp = self.session.request(method, self.url + path, json=body, headers=headers,
                                    timeout=300)
        try:
            answer = resp.json() if resp.content else None
        except ValueError:
            answer = resp.text
        headers = {name: resp.headers[name].replace(self.url, "$URL")
                   for name in COMPARED_HEADERS if name in resp.headers}
        ex = Exchange(method, path, version, body, resp.status_code, answer, roles,
                      headers, resp.reason or "")
        self.log.append(ex)
        return ex

    def roots(self) -> dict[str, str]:
        """Each provider made so far and the root of its tree."""
        out = {}
        for rp in self.parents:
            top = rp
            while self.parents.get(top):
                top = self.parents[top]
            out[rp] = top
        return out

    def uuid(self, kind: str, n: int) -> str:
        return str(uuid.uuid5(_NS, f"{self.run}-{kind}-{n}"))

    def provider(self, ref: int) -> str | None:
        return self.providers[ref % len(self.providers)] if self.providers else None

    def generation(self, rp: str) -> int:
        ex = self.call("GET", f"/resource_providers/{rp}")
        return ex.answer["generation"] if ex.status == 200 else 0

    # -- operations ------------------------------------------------------------

    def setup(self) -> list[Exchange]:
        """The names every scenario may use; the exchanges, to compare."""
        return [self.call("PUT", "/resource_classes/CUSTOM_MAGIC"),
                self.call("PUT", "/traits/CUSTOM_GOLD")]

    def apply(self, op: object) -> Exchange | None:
        handler = getattr(self, "_" + type(op).__name__)
        return handler(op)

    def _Provider(self, op: O.Provider) -> Exchange:
        rp = self.uuid("rp", len(self.providers))
        parent = None if op.parent is None else self.provider(op.parent)
        body = {"name": f"rp-{rp[:8]}", "uuid": rp}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        ex = self.call("POST", "/resource_providers", body)
        if ex.status == 200:
            self.providers.append(rp)
            self.parents[rp] = parent
            if op.sharing:
                self.sharing.add(rp)
                self.call("PUT", f"/resource_providers/{rp}/traits",
                          {"traits": [O.SHARES], "resource_provider_generation": 0})
                self.call("PUT", f"/resource_providers/{rp}/aggregates",
                          {"aggregates": [AGGREGATE_UUIDS["A"]],
                           "resource_provider_generation": 1})
        return ex

    def _SetInventory(self, op: O.SetInventory) -> Exchange | None:
        rp = self.provider(op.provider)
        if rp is None:
            return None
        inventories = {
            rc: {"total": t, "reserved": r, "min_unit": lo, "max_unit": hi,
                 "step_size": step, "allocation_ratio": ratio}
            for rc, (t, r, lo, hi, step, ratio) in op.inventories}
        if len(inventories) == 1:
            # A class the provider does not have yet is added alone (POST,
            # answered with a Location), as agents add one class at a time.
            held = self.call("GET", f"/resource_providers/{rp}/inventories")
            (rc, fields), = inventories.items()
            if held.status == 200 and rc not in held.answer["inventories"]:
                return self.call("POST", f"/resource_providers/{rp}/inventories", {
                    "resource_class": rc, **fields,
                    "resource_provider_generation": held.answer["resource_provider_generation"]})
        return self.call("PUT", f"/resource_providers/{rp}/inventories", {
            "inventories": inventories,
            "resource_provider_generation": self.generation(rp)})

    def _SetTraits(self, op: O.SetTraits) -> Exchange | None:
        rp = self.provider(op.provider)
        if rp is None:
            return None
        traits = sorted(set(op.traits) | ({O.SHARES} if rp in self.sharing else set()))
        return self.call("PUT", f"/resource_providers/{rp}/traits", {
            "traits": traits, "resource_provider_generation": self.generation(rp)})

    def _SetAggregates(self, op: O.SetAggregates) -> Exchange | None:
        rp = self.provider(op.provider)
        if rp is None:
            return None
        return self.call("PUT", f"/resource_providers/{rp}/aggregates", {
            "aggregates": [AGGREGATE_UUIDS[a] for a in op.aggregates],
            "resource_provider_generation": self.generation(rp)})

    def _Allocate(self, op: O.Allocate) -> Exchange | None:
        if not self.providers:
            return None
        allocations: dict[str, dict] = {}
        for ref, rc, amount in op.parts:
            res = allocations.setdefault(self.provider(ref), {"resources": {}})["resources"]
            res[rc] = res.get(rc, 0) + amount
        consumer = self.uuid("consumer", len(self.consumers))
        ex = self.call("PUT", f"/allocations/{consumer}", {
            "allocations": allocations, "project_id": self.uuid("project", 0),
            "user_id": self.uuid("user", 0), "consumer_generation": None})
        if ex.status == 204:
            self.consumers.append(consumer)
        return ex

    def _Reshape(self, op: O.Reshape) -> Exchange | None:
        if not self.providers:
            return None
        inventories = {}
        for ref, invs in op.inventories:
            rp = self.provider(ref)
            inventories[rp] = {
                "resource_provider_generation": self.generation(rp),
                "inventories": {
                    rc: {"total": t, "reserved": r, "min_unit": lo, "max_unit": hi,
                         "step_size": step, "allocation_ratio": ratio}
                    for rc, (t, r, lo, hi, step, ratio) in invs}}
        allocations = {}
        target = None if op.move_to is None else self.provider(op.move_to)
        for consumer in self.consumers:
            ex = self.call("GET", f"/allocations/{consumer}")
            if ex.status != 200 or not ex.answer.get("allocations"):
                continue
            held: dict[str, dict] = {}
            for rp, a in ex.answer["allocations"].items():
                dest = held.setdefault(target or rp, {"resources": {}})["resources"]
                for rc, n in a["resources"].items():
                    dest[rc] = dest.get(rc, 0) + n
            allocations[consumer] = {
                "allocations": held, "project_id": ex.answer["project_id"],
                "user_id": ex.answer["user_id"],
                "consumer_generation": ex.answer["consumer_generation"],
                "consumer_type": ex.answer.get("consumer_type", "INSTANCE")}
        # Only services may reshape.
        return self.call("POST", "/reshaper", {"inventories": inventories,
                                               "allocations": allocations},
                         roles="admin,member,reader,service")

    def _Free(self, op: O.Free) -> Exchange | None:
        if not self.consumers:
            return None
        consumer = self.consumers.pop(op.consumer % len(self.consumers))
        return self.call("DELETE", f"/allocations/{consumer}")

    def _DeleteProvider(self, op: O.DeleteProvider) -> Exchange | None:
        rp = self.provider(op.provider)
        if rp is None:
            return None
        ex = self.call("DELETE", f"/resource_providers/{rp}")
        if ex.status == 204:
            self.providers.remove(rp)
        return ex

    def _Query(self, op: O.Query) -> Exchange:
        return self.call("GET", self.query_path(op.params), version=op.version)

    def _Read(self, op: O.Read) -> Exchange:
        path = op.path.replace("@project", self.uuid("project", 0))
        if "@provider" in path:
            head, _, rest = path.partition("@provider")
            digits = "".join(itertools.takewhile(str.isdigit, rest))
            rp = self.provider(int(digits)) or "ffffffff-ffff-ffff-ffff-ffffffffffff"
            path = head + rp + rest[len(digits):]
        return self.call("GET", path, version=op.version)

    def query_path(self, params) -> str:
        parts = []
        for key, value in params:
            if value.startswith("@provider"):
                n = int(value[len("@provider"):])
                value = self.provider(n) or "ffffffff-ffff-ffff-ffff-ffffffffffff"
            parts.append(f"{key}={quote(value, safe=':,!-_')}")
        return "/allocation_candidates?" + "&".join(parts)

    # -- clean-up --------------------------------------------------------------

    def clear(self) -> None:
        """Remove everything this replay made, so the next one starts empty."""
        for consumer in self.consumers:
            self.call("DELETE", f"/allocations/{consumer}")
        self.consumers.clear()
        remaining = list(self.providers)
        while remaining:
            parents = {self.parents.get(rp) for rp in remaining}
            leaves = [rp for rp in remaining if rp not in parents]
            for rp in leaves:
                self.call("DELETE", f"/resource_providers/{rp}")
            remaining = [rp for rp in remaining if rp not in leaves]
        self.providers.clear()
