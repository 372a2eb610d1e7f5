"""The collector is held off while a request is answered, and only then."""

from __future__ import annotations

import gc
import threading

import pytest

from allotment.api.collector_pause import CollectorPause


def _app(seen: list[bool], fail: bool = False):
    def app(environ, start_response):
        seen.append(gc.isenabled())
        if fail:
            raise RuntimeError("boom")
        return [b"ok"]
    return app


def test_paused_during_the_request_and_enabled_after():
    seen: list[bool] = []
    assert gc.isenabled()
    assert CollectorPause(_app(seen))({}, None) == [b"ok"]
    assert seen == [False]
    assert gc.isenabled()


def test_enabled_again_when_the_request_fails():
    seen: list[bool] = []
    with pytest.raises(RuntimeError):
        CollectorPause(_app(seen, fail=True))({}, None)
    assert seen == [False]
    assert gc.isenabled()


def test_enabled_only_when_the_last_concurrent_request_ends():
    started, release = threading.Event(), threading.Event()

    def slow(environ, start_response):
        started.set()
        release.wait(10)
        return []

    fast_seen: list[bool] = []

    def app(environ, start_response):
        return slow(environ, start_response) if environ.get("slow") else (
            fast_seen.append(gc.isenabled()) or [])

    pause = CollectorPause(app)
    worker = threading.Thread(target=pause, args=({"slow": True}, None))
    worker.start()
    assert started.wait(10)
    pause({}, None)
    assert fast_seen == [False]
    assert not gc.isenabled()  # the slow request is still in flight
    release.set()
    worker.join()
    assert gc.isenabled()


def test_a_collector_disabled_by_the_host_stays_disabled():
    seen: list[bool] = []
    gc.disable()
    try:
        CollectorPause(_app(seen))({}, None)
        assert not gc.isenabled()
    finally:
        gc.enable()
