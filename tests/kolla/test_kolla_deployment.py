"""allotment deployed from kolla-ansible's own files, as an operator gets it.

Two deployments (tests/kolla/deployment.py): the current placement role
under uWSGI (``placement.wsgi.api:application``) and the 2025.1 role under
Apache with mod_wsgi (``WSGIScriptAlias / .../bin/placement-api``), each
behind haproxy with kolla's service file: TLS, ``option httpchk GET /``
expecting 200, ``X-Forwarded-Proto https``.
"""

from __future__ import annotations

import uuid

import pytest
import requests

from tests.kolla import frontends

KINDS = ("uwsgi", "apache")
# Every test of the lane in one worker: the deployments are per session.
pytestmark = pytest.mark.xdist_group("kolla")


def _get(deployment, path: str, version: str = "1.0", **kw) -> requests.Response:
    return requests.get(deployment.public_url + path, verify=str(deployment.ca_file),
                        timeout=30, headers={"OpenStack-API-Version": f"placement {version}",
                                             "X-Auth-Token": "admin"}, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_haproxy_health_check_passes(kolla_deployments, kind):
    """haproxy's ``option httpchk GET /`` (and, in the current role,
    ``http-check expect status 200``) finds the server up, on a 200."""
    found = kolla_deployments(kind)
    cfg = (found.workdir / "haproxy.cfg").read_text()
    assert "option httpchk GET /" in cfg
    assert ("http-check expect status 200" in cfg) == (kind == "uwsgi")
    rows = frontends.servers(found.workdir)
    assert [(r["status"], r["check_status"], r["check_code"]) for r in rows] == \
        [("UP", "L7OK", "200")]


@pytest.mark.parametrize("kind", KINDS)
def test_location_names_https_and_the_public_host(kolla_deployments, kind):
    """POST /resource_providers at 1.0 answers a Location on the public
    https URL: haproxy's X-Forwarded-Proto read as kolla's placement.conf
    asks ([oslo_middleware] enable_proxy_headers_parsing)."""
    found = kolla_deployments(kind)
    rp = str(uuid.uuid4())
    resp = requests.post(found.public_url + "/resource_providers",
                         json={"name": f"kolla-{rp}", "uuid": rp},
                         verify=str(found.ca_file), timeout=30,
                         headers={"OpenStack-API-Version": "placement 1.0",
                                  "X-Auth-Token": "admin"})
    assert resp.status_code == 201, resp.text
    assert resp.headers["Location"] == f"{found.public_url}/resource_providers/{rp}"
    # Straight to the WSGI server, without haproxy's header: its own
    # address and plain http, so the https above is haproxy's doing.
    other = str(uuid.uuid4())
    direct = requests.post(found.backend_url + "/resource_providers",
                           json={"name": f"kolla-{other}", "uuid": other}, timeout=30,
                           headers={"OpenStack-API-Version": "placement 1.0",
                                    "X-Auth-Token": "admin"})
    assert direct.status_code == 201, direct.text
    assert direct.headers["Location"] == f"{found.backend_url}/resource_providers/{other}"


@pytest.mark.parametrize("kind", KINDS)
def test_links_never_say_http(kolla_deployments, kind):
    """The version document and a provider's links, read through haproxy,
    are on the public https URL or relative to it."""
    found = kolla_deployments(kind)
    rp = str(uuid.uuid4())
    made = requests.post(found.public_url + "/resource_providers",
                         json={"name": f"kolla-{rp}", "uuid": rp},
                         verify=str(found.ca_file), timeout=30,
                         headers={"OpenStack-API-Version": "placement 1.20",
                                  "X-Auth-Token": "admin"})
    assert made.status_code == 200, made.text
    hrefs = [link["href"] for link in made.json()["links"]]
    root = _get(found, "/")
    assert root.status_code == 200
    for version in root.json()["versions"]:
        hrefs += [link["href"] for link in version["links"]]
    assert hrefs
    for href in hrefs:
        assert href.startswith((found.public_url + "/", "/")) or href == "", href
