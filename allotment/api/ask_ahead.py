"""World reads ask the database whether anything changed as soon as they
arrive, rather than once they are routed."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import falcon


def world_readers(routes: Iterable[tuple[str, object]]) -> Callable[[str, str], bool]:
    """``reads_world(method, path)`` for the resources among ``routes`` that
    declare the methods they answer from the process's world
    (``world_reads``, see api.resource.Resource)."""
    router = falcon.routing.CompiledRouter()
    methods: dict[int, frozenset[str]] = {}
    for path, resource in routes:
        declared = frozenset(getattr(resource, "world_reads", ()))
        if declared:
            router.add_route(path, resource)
            methods[id(resource)] = declared

    def reads_world(method: str, path: str) -> bool:
        found = router.find(path)
        return found is not None and method in methods[id(found[0])]

    return reads_world


class AskAhead:
    """Send the database the question every read of the world begins with
    (whether anything changed since this process last looked,
    ``world.sync.Replica.ask_ahead``) as soon as such a request arrives, and
    take the answer when the read gets there: on PostgreSQL the database's
    process wakes up and answers while the request is parsed, checked and
    routed, instead of after.  A question its request did not take is
    ended with the request.  Only reads the world serves ask (the resources
    say which, ``reads_world``): anything else would cost the database a
    question nobody reads.
    """

    def __init__(self, application, ask: Callable[[], None], settle: Callable[[], None],
                 reads_world: Callable[[str, str], bool]) -> None:
        self.application = application
        self._ask = ask
        self._settle = settle
        self._reads_world = reads_world

    def __call__(self, environ, start_response):
        if not self._reads_world(environ.get("REQUEST_METHOD", ""),
                                 environ.get("PATH_INFO", "")):
            return self.application(environ, start_response)
        self._ask()
        try:
            return self.application(environ, start_response)
        finally:
            self._settle()
