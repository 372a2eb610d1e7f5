"""Resource classes: ``/resource_classes[/{name}]``."""

from __future__ import annotations

from allotment.client import versions as mv
from allotment.client._base import Noun, seg
from allotment.client.exceptions import NotFound


class ResourceClasses(Noun):
    def list(self, *, version: str | None = None) -> list[str]:
        body = self._client.get("/resource_classes", version=version).json()
        return [rc["name"] for rc in body["resource_classes"]]

    def exists(self, name: str, *, version: str | None = None) -> bool:
        try:
            self._client.get(f"/resource_classes/{seg(name)}", version=version)
        except NotFound:
            return False
        return True

    def create(self, name: str, *, version: str | None = None) -> None:
        """``POST``: fails with DuplicateName if it exists."""
        version = self._version(version)
        mv.require(version, "custom_resource_classes")
        self._client.post("/resource_classes", {"name": name}, version=version)

    def ensure(self, name: str, *, version: str | None = None) -> None:
        """Create the custom class ``name`` unless it exists (idempotent)."""
        version = self._version(version)
        if mv.at_least(version, "put_resource_class"):
            self._client.put(f"/resource_classes/{seg(name)}", version=version)
        elif not self.exists(name, version=version):
            self.create(name, version=version)

    def delete(self, name: str, *, version: str | None = None) -> None:
        self._client.delete(f"/resource_classes/{seg(name)}", version=version)
