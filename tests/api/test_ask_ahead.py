"""api.ask_ahead.AskAhead: world reads ask the database early, and every
question asked is ended with its request.  Which requests read the world is
what the API's resources declare (``world_reads``)."""

from __future__ import annotations

import pytest

from allotment.api import routes
from allotment.api.ask_ahead import AskAhead, world_readers
from allotment.runtime import Runtime

READS_WORLD = world_readers(routes.build(Runtime(conf=None, db=None)))


def _middleware(app=None):
    calls: list[str] = []

    def inner(environ, start_response):
        calls.append("app")
        if app is not None:
            return app(environ, start_response)
        return [b"ok"]

    wrapped = AskAhead(inner, lambda: calls.append("ask"), lambda: calls.append("settle"),
                       READS_WORLD)
    return wrapped, calls


@pytest.mark.parametrize("path", ["/allocation_candidates", "/resource_providers",
                                  "/resource_providers/x", "/resource_providers/x/usages",
                                  "/resource_providers/x/inventories",
                                  "/resource_providers/x/traits",
                                  "/resource_providers/x/aggregates"])
def test_world_reads_ask_before_the_application_and_settle_after(path):
    wrapped, calls = _middleware()
    assert wrapped({"REQUEST_METHOD": "GET", "PATH_INFO": path}, None) == [b"ok"]
    assert calls == ["ask", "app", "settle"]


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/resource_providers"), ("PUT", "/resource_providers/x/inventories"),
    ("GET", "/traits"), ("GET", "/"), ("GET", "/usages"), ("HEAD", "/resource_providers"),
    ("GET", "/resource_providers/x/allocations"),
    ("GET", "/allocation_candidatesx"), ("GET", "/resource_providers/x/usages/y")])
def test_other_requests_ask_nothing(method, path):
    wrapped, calls = _middleware()
    wrapped({"REQUEST_METHOD": method, "PATH_INFO": path}, None)
    assert calls == ["app"]


def test_a_failing_request_still_settles():
    def boom(environ, start_response):
        raise RuntimeError("boom")

    wrapped, calls = _middleware(boom)
    with pytest.raises(RuntimeError):
        wrapped({"REQUEST_METHOD": "GET", "PATH_INFO": "/allocation_candidates"}, None)
    assert calls == ["ask", "app", "settle"]


def test_a_resource_that_declares_world_reads_asks():
    class Reader:
        world_reads = ("GET",)

        def on_get(self, req, resp) -> None:
            pass

        def on_put(self, req, resp) -> None:
            pass

    reads = world_readers([("/new/{thing}", Reader()), ("/", object())])
    assert reads("GET", "/new/x")
    assert not reads("PUT", "/new/x")
    assert not reads("GET", "/")
    assert not reads("GET", "/new")
