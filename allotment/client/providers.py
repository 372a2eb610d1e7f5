"""Resource providers: ``/resource_providers`` and ``/resource_providers/{uuid}``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from allotment.client import versions as mv
from allotment.client._base import Noun, csv, member_of_values, seg


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None = None
    root_provider_uuid: str | None = None

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Provider:
        return cls(
            uuid=body["uuid"],
            name=body["name"],
            generation=body.get("generation", 0),
            parent_provider_uuid=body.get("parent_provider_uuid"),
            # Before 1.14 every provider is its own root.
            root_provider_uuid=body.get("root_provider_uuid", body["uuid"]),
        )


_UNSET: Any = object()


class Providers(Noun):
    def list(
        self,
        *,
        name: str | None = None,
        uuid: str | None = None,
        member_of: str | Iterable[Any] | None = None,
        in_tree: str | None = None,
        resources: Mapping[str, int] | None = None,
        required: Iterable[str] | str | None = None,
        version: str | None = None,
    ) -> list[Provider]:
        """``GET /resource_providers`` with its filters.

        ``required`` is a list of trait names (``!NAME`` forbids) or, from
        1.39, a list whose items may themselves be ``in:A,B`` strings; each
        item is sent as its own ``required`` parameter.
        """
        version = self._version(version)
        params: list[tuple[str, str]] = []
        if name is not None:
            params.append(("name", name))
        if uuid is not None:
            params.append(("uuid", uuid))
        if member_of is not None:
            mv.require(version, "member_of")
            values = member_of_values(member_of)
            if len(values) > 1:
                mv.require(version, "multiple_member_of")
            params.extend(("member_of", v) for v in values)
        if in_tree is not None:
            mv.require(version, "nested_providers")
            params.append(("in_tree", in_tree))
        if resources:
            mv.require(version, "resources_filter")
            params.append(("resources", csv(f"{rc}:{n}" for rc, n in resources.items())))
        if required:
            mv.require(version, "required_traits_filter")
            if isinstance(required, str):
                params.append(("required", required))
            elif any(r.startswith("in:") for r in required):
                mv.require(version, "any_traits")
                params.extend(("required", r) for r in required)
            else:
                params.append(("required", csv(required)))
        body = self._client.get("/resource_providers", params=params, version=version).json()
        return [Provider.from_body(p) for p in body["resource_providers"]]

    def get(self, uuid: str, *, version: str | None = None) -> Provider:
        resp = self._client.get(f"/resource_providers/{seg(uuid)}", version=version)
        return Provider.from_body(resp.json())

    def find(self, uuid: str, *, version: str | None = None) -> Provider | None:
        """Like :meth:`get`, but None when there is no such provider."""
        from allotment.client.exceptions import NotFound

        try:
            return self.get(uuid, version=version)
        except NotFound:
            return None

    def create(
        self,
        name: str,
        *,
        uuid: str | None = None,
        parent_provider_uuid: str | None = None,
        version: str | None = None,
    ) -> Provider:
        version = self._version(version)
        body: dict[str, Any] = {"name": name}
        if uuid is not None:
            body["uuid"] = uuid
        if parent_provider_uuid is not None:
            mv.require(version, "nested_providers")
            body["parent_provider_uuid"] = parent_provider_uuid
        resp = self._client.post("/resource_providers", body, version=version)
        if resp.status == 200 and resp.body:
            return Provider.from_body(resp.json())
        # Before 1.20 the answer is a bare 201 with a Location.
        location = resp.header("location") or ""
        new_uuid = uuid or location.rstrip("/").rsplit("/", 1)[-1]
        return self.get(new_uuid, version=version)

    def update(
        self,
        uuid: str,
        *,
        name: str,
        parent_provider_uuid: str | None = _UNSET,
        version: str | None = None,
    ) -> Provider:
        """``PUT /resource_providers/{uuid}``: rename, and (1.14+) set the
        parent — from 1.37 a parent may also be changed or removed."""
        version = self._version(version)
        body: dict[str, Any] = {"name": name}
        if parent_provider_uuid is not _UNSET:
            mv.require(version, "nested_providers")
            body["parent_provider_uuid"] = parent_provider_uuid
        resp = self._client.put(f"/resource_providers/{seg(uuid)}", body, version=version)
        return Provider.from_body(resp.json())

    def delete(self, uuid: str, *, version: str | None = None) -> None:
        self._client.delete(f"/resource_providers/{seg(uuid)}", version=version)

    def in_tree(self, uuid: str, *, version: str | None = None) -> list[Provider]:
        """Every provider of the tree containing ``uuid``, parents first."""
        return parents_first(self.list(in_tree=uuid, version=version))

    def sharing(self, aggregates: Iterable[str], *, version: str | None = None) -> list[Provider]:
        """Providers with MISC_SHARES_VIA_AGGREGATE in any of ``aggregates``."""
        aggs = sorted(set(aggregates))
        if not aggs:
            return []
        return self.list(member_of=[set(aggs)], required=["MISC_SHARES_VIA_AGGREGATE"],
                         version=version)


def parents_first(providers: Iterable[Provider]) -> list[Provider]:
    """Order providers so every parent precedes its children (stable by name)."""
    pending = sorted(providers, key=lambda p: (p.name, p.uuid))
    known = {p.uuid for p in pending}
    placed: set[str] = set()
    out: list[Provider] = []
    while pending:
        rest = []
        for p in pending:
            parent = p.parent_provider_uuid
            if parent is None or parent in placed or parent not in known:
                out.append(p)
                placed.add(p.uuid)
            else:
                rest.append(p)
        if len(rest) == len(pending):  # a cycle cannot happen; keep whatever is left
            out.extend(rest)
            break
        pending = rest
    return out
