"""Traits: ``/traits`` and ``/resource_providers/{uuid}/traits``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from allotment.client import versions as mv
from allotment.client._base import Noun, csv, seg
from allotment.client.exceptions import NotFound


@dataclass
class ProviderTraitSet:
    resource_provider_generation: int
    traits: set[str] = field(default_factory=set)


class Traits(Noun):
    def list(self, *, name: str | None = None, associated: bool | None = None,
             version: str | None = None) -> list[str]:
        """``name`` is a filter such as ``startswith:CUSTOM_`` or ``in:A,B``."""
        version = self._version(version)
        mv.require(version, "traits")
        params = []
        if name is not None:
            params.append(("name", name))
        if associated is not None:
            params.append(("associated", "true" if associated else "false"))
        return self._client.get("/traits", params=params, version=version).json()["traits"]

    def exists(self, name: str, *, version: str | None = None) -> bool:
        try:
            self._client.get(f"/traits/{seg(name)}", version=self._required(version))
        except NotFound:
            return False
        return True

    def ensure(self, name: str, *, version: str | None = None) -> None:
        """Create the custom trait ``name`` if missing (201 or 204)."""
        self._client.put(f"/traits/{seg(name)}", version=self._required(version))

    def ensure_all(self, names: Iterable[str], *, version: str | None = None) -> None:
        """Create the custom traits among ``names`` that the service lacks."""
        wanted = sorted({n for n in names if n.startswith("CUSTOM_")})
        if not wanted:
            return
        existing = set(self.list(name="in:" + csv(wanted), version=version))
        for name in wanted:
            if name not in existing:
                self.ensure(name, version=version)

    def delete(self, name: str, *, version: str | None = None) -> None:
        self._client.delete(f"/traits/{seg(name)}", version=self._required(version))

    def _required(self, version: str | None) -> str:
        version = self._version(version)
        mv.require(version, "traits")
        return version


class ProviderTraits(Noun):
    def _path(self, rp: str) -> str:
        return f"/resource_providers/{seg(rp)}/traits"

    def get(self, rp: str, *, version: str | None = None) -> ProviderTraitSet:
        version = self._version(version)
        mv.require(version, "traits")
        body = self._client.get(self._path(rp), version=version).json()
        return ProviderTraitSet(body["resource_provider_generation"], set(body["traits"]))

    def set(self, rp: str, traits: Iterable[str], generation: int, *,
            version: str | None = None) -> ProviderTraitSet:
        """Replace the traits of ``rp``.  Traits must exist; see
        :meth:`Traits.ensure_all`."""
        version = self._version(version)
        mv.require(version, "traits")
        payload = {"traits": sorted(set(traits)), "resource_provider_generation": generation}
        body = self._client.put(self._path(rp), payload, version=version).json()
        return ProviderTraitSet(body["resource_provider_generation"], set(body["traits"]))

    def delete(self, rp: str, *, version: str | None = None) -> None:
        version = self._version(version)
        mv.require(version, "traits")
        self._client.delete(self._path(rp), version=version)
