"""World reads ask the database whether anything changed as soon as they
arrive, rather than once they are routed."""

from __future__ import annotations

import re
from collections.abc import Callable


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
