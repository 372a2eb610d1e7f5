"""The web view at scale and what an operator trips over: one read per
page, filters, sorting, paging and totals; errors as pages; sign-out and
"signed in as"; /ui/; Accept: text/html; the favicon; a sharing provider's
page; inventory limits and consumers on a provider."""

from __future__ import annotations

import re

import pytest

from allotment.client import DirectTransport, PlacementClient
from tests.api.test_metrics import scrape, value
from tests.cli.world import AGG, seed

HTML = {"Accept": "text/html,application/xhtml+xml"}


@pytest.fixture
def world(app):
    client = PlacementClient(DirectTransport(app), headers={"X-Roles": "admin"})
    return seed(client)


def hosts_on(text: str) -> list[str]:
    return re.findall(r'<tr class="host" data-name="([^"]+)"', text)


def test_hosts_page_is_one_listing(api, world):
    name = "allotment_http_requests_total"
    listing = {"route": "/resource_providers", "method": "GET"}
    # One listing, and no reading of a provider's own (the listing's extension
    # answered, so its client did not fall back to them).
    one = {"route": "/resource_providers/{uuid}/inventories", "method": "GET"}
    before = value(scrape(api), name, **listing), value(scrape(api), name, **one)
    assert api.get("/ui", headers=HTML).status == 200
    assert value(scrape(api), name, **listing) - before[0] == 1
    assert value(scrape(api), name, **one) == before[1]


def test_filters_sort_and_totals(api, world):
    assert hosts_on(api.get("/ui?trait=CUSTOM_GOLD").text) == ["compute-1"]
    assert hosts_on(api.get("/ui?class=VGPU").text) == ["compute-1"]
    assert len(hosts_on(api.get(f"/ui?aggregate={AGG}").text)) == 3
    assert hosts_on(api.get("/ui?sort=usage&class=VCPU").text) == ["compute-1", "compute-2"]
    page = api.get("/ui").text
    total = re.search(r'<tr class="total" id="total">(.*?)</tr>', page, re.S).group(1)
    assert 'data-rc="VCPU"\n          data-used="6" data-capacity="32"' in total
    assert f'data-aggregate="{AGG}"' in page
    assert api.get("/ui?sort=sideways", headers=HTML).status == 400


def test_paging(api, world):
    first = api.get("/ui?per_page=2").text
    assert hosts_on(first) == ["compute-1", "compute-2"]
    assert "page 1 of 2" in first and 'rel="next"' in first
    second = api.get("/ui?per_page=2&page=2").text
    assert hosts_on(second) == ["shared-disk"]
    assert 'rel="prev"' in second and 'rel="next"' not in second
    # The total is of every host, not of the page.
    assert 'id="count">3<' in second

    # A number past any page is the last page; other scripts' digits, which
    # int() reads, are not a number here.
    assert hosts_on(api.get("/ui?per_page=2&page=" + "9" * 5000).text) == ["shared-disk"]
    assert hosts_on(api.get("/ui?per_page=" + "9" * 5000).text) == [
        "compute-1", "compute-2", "shared-disk"]
    assert api.get("/ui?page=%C2%B2", headers=HTML).status == 400  # superscript two
    assert api.get("/ui?page=%D9%A3", headers=HTML).status == 400  # Arabic-Indic three


def test_errors_are_pages_for_browsers(api, world):
    resp = api.get("/ui/trees/00000000-0000-0000-0000-000000000000", headers=HTML)
    assert resp.status == 404
    assert resp.headers["content-type"].startswith("text/html")
    assert "may have been deleted" in resp.text and "Back to the hosts" in resp.text
    denied = api.get("/ui", token="alice", headers=HTML)
    assert denied.status == 403 and "allotment:web:view" in denied.text
    assert "Sign in with another token" in denied.text


def test_signed_in_as_and_sign_out(api, world):
    page = api.get("/ui", token=None, headers={**HTML, "Cookie": "allotment_token=admin"})
    assert "signed in as admin" in page.text and 'id="sign-out"' in page.text
    out = api.post("/ui/logout", body="", token=None,
                   content_type="application/x-www-form-urlencoded",
                   headers={"Cookie": "allotment_token=admin"})
    assert out.status == 303 and out.headers["location"] == "/ui/login"
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert out.headers["set-cookie"].startswith("allotment_token=;")


def test_trailing_slash_accept_html_and_favicon(api, world):
    resp = api.get("/ui/", headers=HTML)
    assert resp.status == 301 and resp.headers["location"] == "/ui"
    assert api.get("/ui", headers={"Accept": "text/html"}).status == 200
    icon = api.get("/favicon.ico", token=None, headers={"Accept": "image/*"})
    assert icon.status == 404 and "max-age" in icon.headers["cache-control"]


def test_sharing_provider_page_lists_the_hosts_it_serves(api, world):
    page = api.get(f"/ui/trees/{world.pool}").text
    served = re.findall(r'<li class="served-host" data-uuid="([^"]+)"', page)
    assert served == [world.host1, world.host2]
    assert "Hosts it serves" not in api.get(f"/ui/trees/{world.host2}").text


def test_tree_page_shows_limits_and_consumers(api, world):
    page = api.get(f"/ui/trees/{world.host1}").text
    record = api.get(f"/resource_providers/{world.numa}/inventories").json[
        "inventories"]["VCPU"]
    assert f'class="num max-unit">{record["max_unit"]}<' in page
    assert f'class="num min-unit">{record["min_unit"]}<' in page
    assert 'class="num step-size">1<' in page
    consumers = re.findall(r'<tr class="consumer" data-consumer="([^"]+)"', page)
    assert world.instance in consumers


def test_capacity_page(api, world):
    page = api.get("/ui/capacity?request=resources%3DVCPU%3A1", headers=HTML)
    assert page.status == 200
    assert re.search(r'id="total">26<', page.text)
    hosts = re.findall(r'<tr class="capacity-host" data-uuid="([^"]+)"', page.text)
    assert hosts == [world.host2, world.host1]  # roomiest first
    assert api.get("/ui/capacity", headers=HTML).status == 200
    bad = api.get("/ui/capacity?request=resources%3DNOPE%3A1", headers=HTML)
    assert bad.status == 400 and "NOPE" in bad.text
