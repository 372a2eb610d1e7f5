"""Errors every layer may raise, rendered by the API in Placement's shape.

The service and storage layers raise these; the API layer turns them into
``{"errors": [{status, title, detail, request_id, code}]}`` bodies.  Keeping
them free of any HTTP framework lets the engine, storage and client share one
vocabulary of failure.
"""

from __future__ import annotations

# Error codes, as documented by Placement's API reference.
DEFAULT = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
RESOURCE_PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
ILLEGAL_DUPLICATE_QUERYPARAM = "placement.query.duplicate_key"
QUERYPARAM_BAD_VALUE = "placement.query.bad_value"
QUERYPARAM_MISSING_VALUE = "placement.query.missing_value"


class PlacementError(Exception):
    """Base of every error that becomes a 4xx/5xx JSON response."""

    status: int = 500
    title: str = "Internal Server Error"
    # The sentence webob-based Placement puts before every detail message;
    # clients that log the detail see the same text from us.
    explanation: str = (
        "The server has either erred or is incapable of performing the "
        "requested operation."
    )

    def __init__(
        self,
        detail: str,
        *,
        code: str = DEFAULT,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = dict(headers or {})

    def format_detail(self, environ: dict | None = None) -> str:
        return f"{self.explanation}\n\n {self.detail}  "


class BadRequest(PlacementError):
    status = 400
    title = "Bad Request"
    explanation = (
        "The server could not comply with the request since it is either "
        "malformed or otherwise incorrect."
    )


class Unauthorized(PlacementError):
    status = 401
    title = "Unauthorized"
    explanation = (
        "This server could not verify that you are authorized to access the "
        "document you requested. Either you supplied the wrong credentials "
        "(e.g., bad password), or your browser does not understand how to "
        "supply the credentials required."
    )


class Forbidden(PlacementError):
    status = 403
    title = "Forbidden"
    explanation = "Access was denied to this resource."


class NotFound(PlacementError):
    status = 404
    title = "Not Found"
    explanation = "The resource could not be found."


class _NamesTheRequest(PlacementError):
    """An error whose explanation names a part of the request, as webob's
    do: ``explanation`` with ``{asked}`` standing for the request's value
    of ``environ_key``."""

    environ_key = ""

    def format_detail(self, environ: dict | None = None) -> str:
        asked = (environ or {}).get(self.environ_key, "")
        return f"{self.explanation.format(asked=asked)} \n\n {self.detail}"


class MethodNotAllowed(_NamesTheRequest):
    status = 405
    title = "Method Not Allowed"
    environ_key = "REQUEST_METHOD"
    explanation = "The method {asked} is not allowed for this resource."


class NotAcceptable(_NamesTheRequest):
    status = 406
    title = "Not Acceptable"
    environ_key = "HTTP_ACCEPT"
    explanation = ("The resource could not be generated that was acceptable to your "
                   "browser (content of type {asked}.")


class Conflict(PlacementError):
    status = 409
    title = "Conflict"
    explanation = "There was a conflict when trying to complete your request."


class RequestEntityTooLarge(PlacementError):
    status = 413
    title = "Request Entity Too Large"
    explanation = "The body of your request was too large for this server."


class RequestURITooLong(PlacementError):
    status = 414
    title = "Request-URI Too Long"
    explanation = "The request URI was too long for this server."


class UnsupportedMediaType(_NamesTheRequest):
    status = 415
    title = "Unsupported Media Type"
    environ_key = "CONTENT_TYPE"
    explanation = "The request media type {asked} is not supported by this server."


class ServiceUnavailable(PlacementError):
    status = 503
    title = "Service Unavailable"
    explanation = (
        "The server is currently unavailable. Please try again at a later time."
    )


class DatabaseUnavailable(ServiceUnavailable):
    """The database could not be reached or failed the statement.

    Nothing was written: the transaction was rolled back (or never began).
    """

    def __init__(self, detail: str, **kw) -> None:
        super().__init__(detail, **kw)
        # Clients and load balancers may try again shortly.
        self.headers.setdefault("Retry-After", "1")


class TransactionAborted(DatabaseUnavailable):
    """The database aborted the transaction to resolve a conflict with
    another one (deadlock, serialization failure, lock wait timeout).
    Running it again can succeed."""


class NodeNotReady(DatabaseUnavailable):
    """The database node cannot take work now (a Galera node that is
    joining, or cut off from the cluster's majority).  Another node, or
    this one a moment later, can."""


class ConcurrentUpdate(Conflict):
    """A generation check failed: someone else changed the entity first."""

    def __init__(self, detail: str, **kwargs) -> None:
        kwargs.setdefault("code", CONCURRENT_UPDATE)
        super().__init__(detail, **kwargs)
