"""A Python client for the Placement API, for allotment and upstream alike.

Quick start::

    from allotment.client import PlacementClient, PlacementDirect

    client = PlacementClient.from_url("http://placement:8778", token="admin")
    with PlacementDirect(database_url="sqlite:///placement.sqlite") as direct:
        ...

See docs/client.md for the guide.
"""

from allotment.client.api import PlacementClient
from allotment.client.candidates import Candidates, CandidatesRequest, RequestGroup
from allotment.client.direct import DirectTransport, PlacementDirect
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
from allotment.client.microversion import LATEST
from allotment.client.provider_tree import ProviderData, ProviderTree
from allotment.client.providers import Provider
from allotment.client.reshape import TreeDriver, TreeUpdater
from allotment.client.transport import HTTPTransport, KeystoneTransport, Response, Transport

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
    "PlacementDirect",
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
]
