"""A Python client for the Placement API, for allotment and upstream alike.

Quick start::

    from allotment.client import PlacementClient

    client = PlacementClient.from_url("http://placement:8778", token="admin")

The client imports nothing of the server: in-process access to allotment
(:class:`allotment.server.in_process.PlacementDirect`) is on the server's side
and reaches the client only as a WSGI callable given to
:class:`DirectTransport`.  The modules whose names begin with ``_`` are
private; what is public is in ``__all__``.  See docs/client.md.
"""

from allotment.client._client import PlacementClient
from allotment.client._transports import HTTPTransport, KeystoneTransport, Response, Transport
from allotment.client._tree_updater import TreeDriver, TreeUpdater
from allotment.client._wsgi import DirectTransport, WSGIApp
from allotment.client.candidates import Candidates, CandidatesRequest, RequestGroup
from allotment.client.exceptions import (
    ApiError,
    BadRequest,
    CannotDeleteParent,
    ClientError,
    Conflict,
    DuplicateName,
    Forbidden,
    GenerationConflict,
    InvalidQuery,
    InventoryInUse,
    MicroversionNotAvailable,
    MicroversionUnsupported,
    NotAcceptable,
    NotFound,
    ReshapeFailed,
    ReshapeNeeded,
    ResourceProviderInUse,
    ResourceProviderNotFound,
    ServerError,
    TransportError,
    Unauthorized,
)
from allotment.client.provider_tree import ProviderData, ProviderTree
from allotment.client.providers import Provider
from allotment.client.versions import LATEST

__all__ = [
    "LATEST",
    "ApiError",
    "BadRequest",
    "Candidates",
    "CandidatesRequest",
    "CannotDeleteParent",
    "ClientError",
    "Conflict",
    "DirectTransport",
    "DuplicateName",
    "Forbidden",
    "GenerationConflict",
    "HTTPTransport",
    "InvalidQuery",
    "InventoryInUse",
    "KeystoneTransport",
    "MicroversionNotAvailable",
    "MicroversionUnsupported",
    "NotAcceptable",
    "NotFound",
    "PlacementClient",
    "Provider",
    "ProviderData",
    "ProviderTree",
    "RequestGroup",
    "ReshapeFailed",
    "ReshapeNeeded",
    "ResourceProviderInUse",
    "ResourceProviderNotFound",
    "Response",
    "ServerError",
    "Transport",
    "TransportError",
    "TreeDriver",
    "TreeUpdater",
    "Unauthorized",
    "WSGIApp",
]
