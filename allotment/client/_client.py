"""The client: one object holding a transport and the nouns of the API.

Every call sends an explicit microversion: the one given to the call
(``version=``), else the client's default (``microversion=`` at
construction, :data:`~allotment.client.versions.LATEST` unless set, or
whatever :meth:`PlacementClient.negotiate` settled on).  Error answers are
raised as the typed exceptions of :mod:`allotment.client.exceptions`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from allotment.client import exceptions
from allotment.client import versions as api_versions
from allotment.client._transports import (
    HTTPTransport,
    KeystoneTransport,
    Params,
    Response,
    Transport,
)
from allotment.client._tree_sync import TreeSync
from allotment.client.aggregates import Aggregates
from allotment.client.allocations import Allocations
from allotment.client.candidates import AllocationCandidatesAPI
from allotment.client.inventories import Inventories
from allotment.client.providers import Providers
from allotment.client.reshaper import Reshaper
from allotment.client.resource_classes import ResourceClasses
from allotment.client.traits import ProviderTraits, Traits
from allotment.client.usages import Usages

if TYPE_CHECKING:
    from allotment.client.provider_tree import ProviderTree


class PlacementClient:
    """A Placement (or allotment) service, reached through ``transport``.

    Nouns: :attr:`providers`, :attr:`inventories`, :attr:`traits`,
    :attr:`provider_traits`, :attr:`aggregates`, :attr:`resource_classes`,
    :attr:`allocations`, :attr:`usages`, :attr:`allocation_candidates`,
    :attr:`reshaper`.  Tree-level operations (``get_provider_tree_and_ensure_root``,
    ``update_from_provider_tree``, ``get_allocations_for_provider_tree``) are
    methods of the client itself.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        microversion: str = api_versions.LATEST,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.transport = transport
        self.microversion = microversion
        # Sent with every request (e.g. a global request id, or X-Roles for a
        # noauth2 development service).
        self.headers = dict(headers or {})
        microversion_parse(microversion)
        self.providers = Providers(self)
        self.inventories = Inventories(self)
        self.traits = Traits(self)
        self.provider_traits = ProviderTraits(self)
        self.aggregates = Aggregates(self)
        self.resource_classes = ResourceClasses(self)
        self.allocations = Allocations(self)
        self.usages = Usages(self)
        self.allocation_candidates = AllocationCandidatesAPI(self)
        self.reshaper = Reshaper(self)
        # Last known state of the trees this client synchronises (see _tree_sync.py).
        self._sync = TreeSync(self)

    # -- construction ------------------------------------------------------

    @classmethod
    def from_url(cls, endpoint: str, *, token: str | None = None, **kwargs: Any) -> PlacementClient:
        """HTTP to ``endpoint`` (e.g. ``http://placement:8778``) with a plain token."""
        mv = kwargs.pop("microversion", api_versions.LATEST)
        headers = kwargs.pop("headers", None)
        return cls(HTTPTransport(endpoint, token=token, **kwargs), microversion=mv,
                   headers=headers)

    @classmethod
    def from_session(cls, session: Any, **kwargs: Any) -> PlacementClient:
        """Through a keystoneauth1 Session or Adapter (keystone deployments).

        ``kwargs``: ``service_type``, ``interface``, ``region_name``,
        ``endpoint_override``, ``microversion``, ``headers``.
        """
        mv = kwargs.pop("microversion", api_versions.LATEST)
        headers = kwargs.pop("headers", None)
        return cls(KeystoneTransport(session, **kwargs), microversion=mv, headers=headers)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> PlacementClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- requests ----------------------------------------------------------

    def version_for(self, version: str | None) -> str:
        return version or self.microversion

    def request(
        self,
        method: str,
        path: str,
        *,
        version: str | None = None,
        params: Params = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        ok: Iterable[int] = (200, 201, 204),
    ) -> Response:
        """Send one request at ``version``; raise the typed error unless the
        status is in ``ok``."""
        hdrs = {"Accept": "application/json", **self.headers,
                api_versions.HEADER: api_versions.header_value(self.version_for(version))}
        hdrs.update(headers or {})
        resp = self.transport.request(method, path, params=params, json=json, headers=hdrs)
        if resp.status not in tuple(ok):
            raise exceptions.from_response(resp.status, resp.body, resp.headers,
                                           method=method, path=path)
        return resp

    def get(self, path: str, **kw: Any) -> Response:
        return self.request("GET", path, **kw)

    def put(self, path: str, json: Any = None, **kw: Any) -> Response:
        return self.request("PUT", path, json=json, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Response:
        return self.request("POST", path, json=json, **kw)

    def delete(self, path: str, **kw: Any) -> Response:
        return self.request("DELETE", path, **kw)

    # -- versions ----------------------------------------------------------

    def versions(self) -> dict[str, str]:
        """``{"min_version": ..., "max_version": ...}`` from the root document."""
        doc = self.transport.request("GET", "/", headers={"Accept": "application/json"})
        if doc.status != 200:
            raise exceptions.from_response(doc.status, doc.body, doc.headers,
                                           method="GET", path="/")
        body = doc.json() or {}
        versions = body.get("versions") or [{}]
        current = next((v for v in versions if v.get("status") == "CURRENT"), versions[0])
        return {"min_version": current.get("min_version", api_versions.MINIMUM),
                "max_version": current.get("max_version", api_versions.MINIMUM)}

    def negotiate(self, wanted: str = api_versions.LATEST) -> str:
        """Use the highest version both sides know, up to ``wanted``.

        Lets one client run against an older Placement: the nouns then pick
        the request and answer formats of that version.
        """
        server = self.versions()
        chosen = min(microversion_parse(wanted), microversion_parse(server["max_version"]))
        if chosen < microversion_parse(server["min_version"]):
            raise exceptions.ClientError(
                f"service supports {server['min_version']}..{server['max_version']}, "
                f"client wants at most {wanted}")
        self.microversion = api_versions.render(chosen)
        return self.microversion

    # -- trees -------------------------------------------------------------

    def get_provider_tree_and_ensure_root(
        self, name: str, uuid: str | None = None, *, parent_provider_uuid: str | None = None,
    ) -> ProviderTree:
        """The tree rooted at the provider ``uuid`` (or named ``name``) plus
        the sharing providers associated with it, creating the root first
        when it does not exist.  The result is a copy the caller may edit."""
        return self._sync.get_provider_tree_and_ensure_root(
            name, uuid, parent_provider_uuid=parent_provider_uuid)

    def update_from_provider_tree(
        self, tree: ProviderTree, allocations: dict[str, dict] | None = None,
    ) -> None:
        """Make the service match ``tree``; with ``allocations``, reshape."""
        self._sync.update_from_provider_tree(tree, allocations)

    def get_allocations_for_provider_tree(self, root: str) -> dict[str, dict]:
        """Every consumer's complete allocations, for consumers that use
        any provider of the tree rooted at ``root`` (uuid or name)."""
        return self._sync.get_allocations_for_provider_tree(root)

    def clear_provider_cache(self) -> None:
        """Forget the cached service state of every tree."""
        self._sync.clear()


def microversion_parse(version: str) -> api_versions.Version:
    return api_versions.parse(version)
