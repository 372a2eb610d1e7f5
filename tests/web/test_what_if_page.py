"""/ui/what-if: where a request fits were some consumers gone, with each
candidate's eviction set (preempt) or displaced consumers (ignore_consumers)."""

from __future__ import annotations

import re

import pytest

from allotment.client import DirectTransport, PlacementClient
from tests.cli.world import seed

HTML = {"Accept": "text/html,application/xhtml+xml"}
# compute-2 has 16 VCPU (8 at a ratio of 2), 2 of them held by a MIGRATION
# consumer; compute-1's NUMA node 16, 4 of them held by an INSTANCE.
FIFTEEN = "request=resources%3DVCPU%3A15"


@pytest.fixture
def conf_overrides() -> dict:
    return {"allotment": {"preemptible_consumer_types": ["MIGRATION"]}}


@pytest.fixture
def world(app):
    client = PlacementClient(DirectTransport(app), headers={"X-Roles": "admin"})
    return seed(client)


def candidates(text: str) -> list[str]:
    return re.findall(r'<tr class="what-if-candidate" data-evicts="(\d+)">', text)


def test_nothing_fits_as_things_are(api, world):
    page = api.get(f"/ui/what-if?{FIFTEEN}", headers=HTML)
    assert page.status == 200
    assert candidates(page.text) == []


def test_preemption_shows_the_eviction_set(api, world):
    page = api.get(f"/ui/what-if?{FIFTEEN}&preempt=1", headers=HTML).text
    assert candidates(page) == ["1"]
    assert re.findall(r'class="victim" data-consumer="([^"]+)"', page) == [world.migration]
    assert f"/trees/{world.host2}" in page
    assert "MIGRATION, generation 1" in page


def test_ignored_consumers_are_shown_displaced(api, world):
    page = api.get(f"/ui/what-if?{FIFTEEN}&ignore={world.instance}", headers=HTML).text
    assert candidates(page) == ["0"]
    assert re.findall(r'class="displaced" data-consumer="([^"]+)"', page) == [world.instance]
    # The candidate is on compute-1's NUMA node, linked to compute-1's tree.
    assert f"/trees/{world.host1}" in page and world.numa in page


def test_bad_input_is_a_page_saying_so(api, world):
    bad = api.get("/ui/what-if?request=resources%3DNOPE%3A1&preempt=1", headers=HTML)
    assert bad.status == 400 and "NOPE" in bad.text
    unknown = api.get(f"/ui/what-if?{FIFTEEN}&ignore=not-a-consumer", headers=HTML)
    assert unknown.status == 400
    assert api.get("/ui/what-if?limit=many&" + FIFTEEN, headers=HTML).status == 400
    assert api.get("/ui/what-if", headers=HTML).status == 200
