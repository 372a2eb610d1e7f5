"""Who and which a request is: the request id every request gets, and
the RequestContext (built by the auth middleware) handed to handlers."""

from __future__ import annotations

import re

import falcon
from oslo_context import context as oslo_context
from oslo_middleware import request_id as oslo_request_id


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


class Context:
    """Expose the RequestContext built by the auth middleware to handlers."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.ctx = req.env.get("allotment.context")
