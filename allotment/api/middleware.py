"""Falcon middleware (microversions, content checks, request context) and
the plain WSGI wrappers around the application."""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Callable

import falcon
from oslo_context import context as oslo_context
from oslo_middleware import request_id as oslo_request_id

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


class Context:
    """Expose the RequestContext built by the auth middleware to handlers."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.ctx = req.env.get("allotment.context")


class CollectorPause:
    """Hold the cyclic garbage collector off while a request is answered.

    A big answer (tens of thousands of candidates) is built from many small
    dicts that all survive until it is encoded; each of them counts towards
    the collector's thresholds, so building the answer set off repeated full
    collections that walk the whole in-memory world -- half the time of such
    a request went there.  Those dicts hold no cycles and are freed by
    reference counting the moment the response is sent; the collector runs
    again, with the allocations it missed counted, once no request is in
    flight in this process.
    """

    def __init__(self, application) -> None:
        self.application = application
        self._lock = threading.Lock()
        self._inflight = 0
        self._was_enabled = True

    def __call__(self, environ, start_response):
        with self._lock:
            if not self._inflight:
                self._was_enabled = gc.isenabled()
            self._inflight += 1
            gc.disable()
        try:
            return self.application(environ, start_response)
        finally:
            with self._lock:
                self._inflight -= 1
                if not self._inflight and self._was_enabled:
                    gc.enable()


class AskAhead:
    """Send the database the question every read of the world begins with
    (whether anything changed since this process last looked) as soon as
    such a request arrives, and take the answer when the read gets there
    (``storage.watch.FeedProbe.ask``): on PostgreSQL the database's process
    wakes up and answers while the request is parsed, checked and routed,
    instead of after.  A question its request did not take is ended with
    the request.  Only reads the world serves ask: anything else would cost
    the database a question nobody reads.
    """

    # The GETs answered from the process's world (service.provider_listing
    # and service.allocation_candidates): the candidates, the provider
    # list, one provider and one provider's usages.
    WORLD_READS = re.compile(r"/(?:allocation_candidates|resource_providers"
                             r"(?:/[^/]+(?:/usages)?)?)/?\Z")

    def __init__(self, application, ask: Callable[[], None],
                 settle: Callable[[], None]) -> None:
        self.application = application
        self._ask = ask
        self._settle = settle

    def __call__(self, environ, start_response):
        if (environ.get("REQUEST_METHOD") != "GET"
                or self.WORLD_READS.match(environ.get("PATH_INFO", "")) is None):
            return self.application(environ, start_response)
        self._ask()
        try:
            return self.application(environ, start_response)
        finally:
            self._settle()


class WsgiPath:
    """Repair a PATH_INFO that a non-conforming server handed over decoded.

    PEP 3333 servers pass the raw path bytes as latin-1 text. Some servers and
    test harnesses decode it as UTF-8 instead; such a path cannot be re-read
    as latin-1 and would otherwise abort the request before any error
    handling. Re-encoding it restores the bytes, so the request is routed (or
    answered 404) like any other.
    """

    def __init__(self, application) -> None:
        self.application = application

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.isascii() and any(ord(ch) > 0xFF for ch in path):
            environ["PATH_INFO"] = path.encode("utf-8", "surrogateescape").decode("latin-1")
        return self.application(environ, start_response)


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


class RequestId:
    """Give every request an id, as oslo.middleware's RequestId does.

    The same contract -- ``req-<uuid>`` in ``openstack.request_id`` and the
    ``x-openstack-request-id`` response header, a well-formed inbound
    ``X-OpenStack-Request-ID`` kept as ``openstack.global_request_id`` --
    without building a WebOb request and response around every call, which
    cost more than answering a small request.
    """

    _GLOBAL_ID = re.compile(oslo_request_id.ID_FORMAT)

    def __init__(self, application) -> None:
        self.application = application

    def __call__(self, environ, start_response):
        inbound = environ.get("HTTP_X_OPENSTACK_REQUEST_ID", "")
        if inbound and self._GLOBAL_ID.match(inbound):
            environ[oslo_request_id.GLOBAL_REQ_ID] = inbound
        req_id = oslo_context.generate_request_id()
        environ[oslo_request_id.ENV_REQUEST_ID] = req_id
        header = oslo_request_id.HTTP_RESP_HEADER_REQUEST_ID

        def start(status, headers, exc_info=None):
            if not any(name.lower() == header for name, _ in headers):
                headers = [*headers, (header, req_id)]
            return start_response(status, headers, exc_info)

        return self.application(environ, start)
