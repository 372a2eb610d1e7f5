"""Upstream Placement 16.0.0's functional suite over HTTP against allotment.

The gabbi YAML files shipped inside the installed ``openstack-placement``
package (in the venv :mod:`tests.harness.upstream` builds) are read from
there at run time and run by gabbi against a live allotment server, on
every backend; the fixtures they name are made by :mod:`tests.gabbi.fixtures`.
A file passes when every one of its tests does (gabbi's ``xfail`` counts as
upstream means it).  Files that cannot run over HTTP are listed with the
reason in docs/compatibility.md (none so far).
"""

from __future__ import annotations

import glob
import os
import unittest
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from gabbi import handlers, httpclient, suitemaker

from tests.gabbi import fixtures
from tests.harness import upstream
from tests.harness.backends import BACKENDS


def gabbits_dir() -> Path:
    venv = upstream.ensure_venv()
    found = glob.glob(str(venv / "lib" / "python3*" / "site-packages" / "placement" / "tests"
                          / "functional" / "gabbits"))
    assert found, f"no gabbits in {venv}"
    return Path(found[0])


def _files() -> list[str]:
    # ALLOTMENT_GABBI_FILES=a,b runs only those files (while working on one);
    # otherwise every file the installed package ships.
    listed = os.environ.get("ALLOTMENT_GABBI_FILES")
    if listed:
        return listed.split(",")
    return sorted(p.stem for p in gabbits_dir().glob("*.yaml"))


# Tests that cannot run over HTTP, with the reason (docs/compatibility.md
# lists them too); gabbi reports them as skipped.
NOT_OVER_HTTP = {
    ("basic-http", "bad content length not int"):
        "an HTTP server refuses a non-numeric Content-Length itself (upstream behind "
        "gunicorn answers gunicorn's own 400 page); only an in-process WSGI call "
        "hands it to the application",
}


def _config(suite: dict) -> str:
    for name in suite.get("fixtures") or []:
        if name in fixtures.CONFIG_OF:
            return fixtures.CONFIG_OF[name]
    return "default"


class _SharedHttp(httpclient.Http):
    """gabbi's client, one connection pool for all tests: gabbi makes a new
    httpx client (and TLS context) per request, which costs more than the
    request against a local server."""

    def __init__(self, client: httpx.Client) -> None:
        self.extensions = {}
        self.client = client


def _params():
    for backend in BACKENDS:
        for name in _files():
            yield pytest.param(backend, name, id=f"{backend}-{name}",
                               marks=pytest.mark.xdist_group(f"gabbi-{backend}"))


@pytest.fixture(scope="module")
def shared_client():
    with httpx.Client() as client:
        yield client


@pytest.mark.parametrize(("backend", "name"), list(_params()))
def test_upstream_gabbi_file(gabbi_backends, shared_client, monkeypatch, record_property,
                             backend, name):
    def get_http(*, intercept=None, verbose=False, **kw):
        if intercept is not None or verbose:
            return original(intercept=intercept, verbose=verbose, **kw)
        return _SharedHttp(shared_client)

    original = httpclient.get_http
    monkeypatch.setattr(httpclient, "get_http", get_http)
    path = gabbits_dir() / f"{name}.yaml"
    suite_dict = yaml.safe_load(path.read_text())
    target = gabbi_backends(backend)
    server = target.server(_config(suite_dict))
    fixtures.TARGET.url = server.url
    fixtures.TARGET.clean = target.clean
    where = urlsplit(server.url)
    for test in suite_dict["tests"]:
        reason = NOT_OVER_HTTP.get((name, test.get("name")))
        if reason:
            test["skip"] = reason
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(), name, suite_dict, str(path.parent), where.hostname,
        where.port, fixtures, None,
        handlers=[h() for h in handlers.RESPONSE_HANDLERS],
        test_loader_name="tests.gabbi")
    result = unittest.TestResult()
    suite.run(result)
    failed = result.failures + result.errors + [
        (t, "unexpected success") for t in result.unexpectedSuccesses]
    counts = (result.testsRun - len(failed) - len(result.skipped), len(failed),
              len(result.skipped))
    # Summed per backend at the end of the run (tests/conftest.py).
    record_property("gabbi", (backend, *counts))
    assert len(result.skipped) == sum(1 for n, _ in NOT_OVER_HTTP if n == name)
    assert not failed, "\n\n".join(f"{t.id()}:\n{why}" for t, why in failed)
