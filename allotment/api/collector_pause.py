"""The cyclic garbage collector held off while requests are answered."""

from __future__ import annotations

import gc
import threading


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
