"""Every one of upstream Placement's gabbi files through haproxy and TLS,
against kolla deployments under uWSGI (tests/kolla): the machinery of
tests/gabbi (the files read from the installed openstack-placement
package, the fixtures made over HTTP), pointed at the public https URL.

Each file runs on the deployment with the server configuration its
fixtures ask for (tests/kolla/deployment.py): kolla's placement.conf with
noauth2, and for some files the new policy defaults, an open policy file
or CORS, made as an operator of kolla makes them.
"""

from __future__ import annotations

import unittest

import httpx
import pytest
import yaml
from gabbi import handlers, httpclient, suitemaker

from allotment.storage import db as db_mod
from tests.conftest import clean
from tests.gabbi import fixtures
from tests.gabbi.test_upstream_gabbits import NOT_OVER_HTTP, _config, _SharedHttp, gabbits_dir

pytestmark = pytest.mark.xdist_group("kolla")


def _files() -> list[str]:
    return sorted(p.stem for p in gabbits_dir().glob("*.yaml"))


@pytest.fixture(scope="module")
def through_haproxy(kolla_deployments):
    """``get(config)``: the uWSGI deployment with that configuration, a
    client trusting its certificate, and how to empty its database."""
    made: dict[str, tuple] = {}

    def get(config: str) -> tuple:
        if config not in made:
            found = kolla_deployments("uwsgi", config)
            database = db_mod.Database(db_mod.create_engine(found.database_url))
            client = httpx.Client(verify=str(found.ca_file))
            made[config] = (found, client, lambda: clean(database), database)
        return made[config][:3]

    yield get
    for _found, client, _empty, database in made.values():
        client.close()
        database.dispose()


@pytest.mark.parametrize("name", _files())
def test_upstream_gabbi_file_through_haproxy(through_haproxy, monkeypatch, name):
    path = gabbits_dir() / f"{name}.yaml"
    suite_dict = yaml.safe_load(path.read_text())
    found, client, empty = through_haproxy(_config(suite_dict))
    original = httpclient.get_http

    def get_http(*, intercept=None, verbose=False, **kw):
        if intercept is not None or verbose:
            return original(intercept=intercept, verbose=verbose, **kw)
        return _SharedHttp(client)

    monkeypatch.setattr(httpclient, "get_http", get_http)
    # The fixtures' own requests (tests/gabbi/builder.py) trust the
    # throw-away certificate too.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(found.ca_file))
    fixtures.TARGET.url = found.public_url
    fixtures.TARGET.clean = empty
    # Every request over https: gabbi's $SCHEME and $NETLOC are then the
    # public URL's, as the Location headers must be.
    suite_dict.setdefault("defaults", {})["ssl"] = True
    for test in suite_dict["tests"]:
        reason = NOT_OVER_HTTP.get((name, test.get("name")))
        if reason:
            test["skip"] = reason
    host, port = found.public_url.removeprefix("https://").split(":")
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(), name, suite_dict, str(path.parent), host, int(port),
        fixtures, None, handlers=[h() for h in handlers.RESPONSE_HANDLERS],
        test_loader_name="tests.kolla")
    result = unittest.TestResult()
    suite.run(result)
    failed = result.failures + result.errors + [
        (t, "unexpected success") for t in result.unexpectedSuccesses]
    assert result.testsRun > 0
    assert len(result.skipped) == sum(1 for n, _ in NOT_OVER_HTTP if n == name)
    assert not failed, "\n\n".join(f"{t.id()}:\n{why}" for t, why in failed)
