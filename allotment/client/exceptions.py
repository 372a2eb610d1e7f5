"""Typed errors of the client.

Every 4xx/5xx answer becomes a :class:`ApiError` subclass chosen first by
Placement's error ``code`` (sent from microversion 1.23) and then by HTTP
status, so callers can write ``except GenerationConflict`` instead of
inspecting bodies.  Servers (or microversions) that send no code still get
the most specific class we can justify from the status and detail text.
"""

from __future__ import annotations

import json
from typing import Any

# Placement's documented error codes: the service's own vocabulary.
from allotment.errors import (
    CONCURRENT_UPDATE,
    DUPLICATE_NAME,
    INVENTORY_INUSE,
    PROVIDER_CANNOT_DELETE_PARENT,
    PROVIDER_IN_USE,
    RESOURCE_PROVIDER_NOT_FOUND,
)
from allotment.errors import DEFAULT as UNDEFINED_CODE
from allotment.errors import ILLEGAL_DUPLICATE_QUERYPARAM as QUERY_DUPLICATE_KEY
from allotment.errors import QUERYPARAM_BAD_VALUE as QUERY_BAD_VALUE
from allotment.errors import QUERYPARAM_MISSING_VALUE as QUERY_MISSING_VALUE


class ClientError(Exception):
    """Base of everything this package raises on purpose."""


class TransportError(ClientError):
    """The request never got an HTTP answer (connection refused, timeout ...)."""


class MicroversionUnsupported(ClientError):
    """The client refuses to send a request the chosen microversion cannot express."""

    def __init__(self, feature: str, needed: str, version: str) -> None:
        super().__init__(f"{feature} needs microversion {needed} or later; "
                         f"this call uses {version}")
        self.feature = feature
        self.needed = needed
        self.version = version


class ReshapeNeeded(ClientError):
    """Raised by a driver's ``update_provider_tree`` when it must move
    allocations, and was called without them."""


class ReshapeFailed(ClientError):
    """``POST /reshaper`` did not succeed; nothing was changed by it."""

    def __init__(self, message: str, cause: ApiError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ApiError(ClientError):
    """The service answered with an error status.

    ``code`` is Placement's error code (``placement.undefined_code`` when the
    service sent none), ``detail`` its message, ``request_id`` the id to quote
    in a bug report.
    """

    status: int = 0

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        code: str = UNDEFINED_CODE,
        title: str = "",
        request_id: str | None = None,
        method: str = "",
        path: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{method} {path} -> {status} {code}: {detail}".strip())
        self.status = status
        self.detail = detail
        self.code = code
        self.title = title
        self.request_id = request_id
        self.method = method
        self.path = path
        self.headers = dict(headers or {})


class BadRequest(ApiError):
    """400: the request was malformed or asked for something invalid."""


class InvalidQuery(BadRequest):
    """400 with one of the ``placement.query.*`` codes."""


class Unauthorized(ApiError):
    """401: no or bad credentials."""


class Forbidden(ApiError):
    """403: policy denied the call."""


class NotFound(ApiError):
    """404: the resource (or route) does not exist."""


class ResourceProviderNotFound(NotFound):
    """404 ``placement.resource_provider.not_found`` (and 400s naming a
    missing provider in a body, which carry the same code)."""


class MethodNotAllowed(ApiError):
    """405."""


class NotAcceptable(ApiError):
    """406: usually a microversion the service does not serve."""


class MicroversionNotAvailable(NotAcceptable):
    """406 because the requested microversion is outside the service's range."""


class Conflict(ApiError):
    """409 without a more specific meaning."""


class GenerationConflict(Conflict):
    """409 ``placement.concurrent_update``: a provider or consumer changed
    since its generation was read.  Refresh and retry."""


class InventoryInUse(Conflict):
    """409 ``placement.inventory.inuse``: inventory still has allocations."""


class DuplicateName(Conflict):
    """409 ``placement.duplicate_name``: the name (or uuid) is taken."""


class ResourceProviderInUse(Conflict):
    """409 ``placement.resource_provider.inuse``: provider has allocations."""


class CannotDeleteParent(Conflict):
    """409 ``placement.resource_provider.cannot_delete_parent``."""


class UnsupportedMediaType(ApiError):
    """415."""


class ServerError(ApiError):
    """5xx."""


_BY_CODE: dict[str, type[ApiError]] = {
    INVENTORY_INUSE: InventoryInUse,
    CONCURRENT_UPDATE: GenerationConflict,
    DUPLICATE_NAME: DuplicateName,
    PROVIDER_IN_USE: ResourceProviderInUse,
    PROVIDER_CANNOT_DELETE_PARENT: CannotDeleteParent,
    QUERY_DUPLICATE_KEY: InvalidQuery,
    QUERY_BAD_VALUE: InvalidQuery,
    QUERY_MISSING_VALUE: InvalidQuery,
}

_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    415: UnsupportedMediaType,
}

# Before 1.23 Placement sent no codes; these phrases of its 409 details are
# stable across releases and are what older clients matched on too.
_CONFLICT_PHRASES: tuple[tuple[str, type[ApiError]], ...] = (
    ("generation conflict", GenerationConflict),
    ("concurrently updated", GenerationConflict),
    ("update conflict", GenerationConflict),
    ("changed while attempting", GenerationConflict),
    ("has allocations", ResourceProviderInUse),
    ("child resource providers", CannotDeleteParent),
    ("in use", InventoryInUse),
    ("already exists", DuplicateName),
    ("conflicting name", DuplicateName),
)


def _first_error(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError):
        return {"detail": body.decode("utf-8", "replace")[:1000]}
    if isinstance(doc, dict):
        errs = doc.get("errors")
        if isinstance(errs, list) and errs and isinstance(errs[0], dict):
            return errs[0]
    return {}


def _classify(status: int, code: str, detail: str) -> type[ApiError]:
    if code == RESOURCE_PROVIDER_NOT_FOUND:
        return ResourceProviderNotFound
    if code == CONCURRENT_UPDATE and status == 409 and " in use" in detail.lower():
        # Placement reports removing an in-use inventory of one class with
        # the concurrent-update code; retrying it with a fresh generation
        # cannot succeed, so it is not presented as a generation conflict.
        return InventoryInUse
    if code in _BY_CODE:
        cls = _BY_CODE[code]
        # A code may only refine its own status family (e.g. query codes on 400).
        base = _BY_STATUS.get(status)
        if base is None or issubclass(cls, base):
            return cls
    if status >= 500:
        return ServerError
    if status == 406 and "microversion" in detail.lower():
        return MicroversionNotAvailable
    if status == 409 and code == UNDEFINED_CODE:
        lowered = detail.lower()
        for phrase, cls in _CONFLICT_PHRASES:
            if phrase in lowered:
                return cls
    return _BY_STATUS.get(status, ApiError)


def from_response(
    status: int,
    body: bytes,
    headers: dict[str, str],
    *,
    method: str = "",
    path: str = "",
) -> ApiError:
    """The typed exception for an error answer."""
    err = _first_error(body)
    code = str(err.get("code") or UNDEFINED_CODE)
    detail = str(err.get("detail") or "").strip()
    lowered = {k.lower(): v for k, v in headers.items()}
    cls = _classify(status, code, detail)
    return cls(
        status,
        detail,
        code=code,
        title=str(err.get("title") or ""),
        request_id=err.get("request_id") or lowered.get("x-openstack-request-id"),
        method=method,
        path=path,
        headers=lowered,
    )
