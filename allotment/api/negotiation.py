"""What a request and its answer speak: the microversion negotiated and
echoed, the media types upstream checks before routing, and the level of
allotment's extensions echoed to whoever asks for them."""

from __future__ import annotations

import falcon

from allotment import errors
from allotment.api import candidates_extensions, microversion


class Microversion:
    """Negotiate the microversion and echo it on every response."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        # The WSGI environment's name of the one header negotiation reads.
        req.context.microversion = microversion.from_header_value(
            req.env.get("HTTP_OPENSTACK_API_VERSION"))

    def process_response(self, req, resp, resource, req_succeeded) -> None:
        version = getattr(req.context, "microversion", None)
        if version is not None:
            resp.set_header(microversion.HEADER, f"{microversion.SERVICE_TYPE} {version}")
            resp.append_header("vary", microversion.HEADER)


class ContentChecks:
    """Checks upstream applies to every request before routing."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        length = req.get_header("content-length")
        if length:
            try:
                size = int(length)
            except ValueError:
                raise errors.BadRequest(
                    "content-length header must be an integer") from None
            if size > 0 and not req.get_header("content-type"):
                raise errors.BadRequest(
                    "content-type header required when content-length > 0")

    def process_resource(self, req, resp, resource, params) -> None:
        # Every GET produces JSON; an Accept header that rules JSON out is a 406.
        accept = req.get_header("accept")
        # Resources that answer another media type (the web view's pages,
        # /metrics) say so and are not held to JSON.
        if req.method == "GET" and accept and getattr(resource, "serves", None) is None \
                and not req.client_accepts("application/json"):
            raise errors.NotAcceptable("Only application/json is provided")


class ExtensionsEcho:
    """Answer every request that carries ``Allotment-Extensions`` with the
    level this service offers, whatever the URL and whatever the status (a
    400 included): a client can tell allotment's refusal of a misused
    extension from upstream's refusal of a parameter it does not know, and
    learn which level is offered when it asked for another."""

    _HEADER = candidates_extensions.HEADER.lower()

    def __init__(self, application) -> None:
        self.application = application

    def __call__(self, environ, start_response):
        if "HTTP_ALLOTMENT_EXTENSIONS" not in environ:
            return self.application(environ, start_response)

        def start(status, headers, exc_info=None):
            headers = [(n, v) for n, v in headers if n.lower() != self._HEADER]
            headers.append((candidates_extensions.HEADER, candidates_extensions.LEVEL))
            return start_response(status, headers, exc_info)

        return self.application(environ, start)
