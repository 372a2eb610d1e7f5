"""A PATH_INFO handed over decoded as UTF-8 is repaired before routing."""

from __future__ import annotations


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
