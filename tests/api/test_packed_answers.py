"""GET /allocation_candidates answers the same when trees come packed.

An answer bigger than the budget of kept answers keeps each tree's whole
answer packed (allotment.engine.packed, by api.candidates_codec); from 1.34
the next request of the kind renders those instead of the candidates, byte
for byte the same.
"""

from __future__ import annotations

import pytest

from allotment.api.candidates_codec import Codec
from allotment.engine import kept
from allotment.server.app import create_app
from allotment.service import setup
from tests.api.candidate_helpers import World
from tests.harness.wsgi_client import Client

# Two isolated groups of one device each: 4 x 3 = 12 candidates per host.
QUERY = ("resources=VCPU:1&resources1=CUSTOM_DEVICE:1&resources2=CUSTOM_DEVICE:1"
         "&group_policy=isolate")


@pytest.fixture
def hosts(api, monkeypatch) -> World:
    # 30 providers, a budget of 30 results: a tree's share is 5 of its 12.
    monkeypatch.setattr(kept, "MIN_BUDGET", 12)
    w = World(api)
    device = w.rc("DEVICE")
    for h in range(6):
        w.add(f"h{h}", inv={"VCPU": 8})
        for d in range(4):
            w.add(f"h{h}d{d}", parent=f"h{h}", inv={device: 1})
    return w


@pytest.fixture
def unpacked(monkeypatch) -> list:
    calls: list = []
    real = Codec.unpack

    def counted(self, packed):
        calls.append(packed.count)
        return real(self, packed)

    monkeypatch.setattr(Codec, "unpack", counted)
    return calls


@pytest.mark.parametrize("version", ["1.34", "latest"])
def test_packed_trees_answer_byte_for_byte_as_candidates(hosts, unpacked, version):
    first = hosts.get(QUERY, version)
    assert len(first.json["allocation_requests"]) == 72 and unpacked == []
    for _ in range(2):
        again = hosts.get(QUERY, version)
        assert again.text == first.text
    assert unpacked == [12] * 12  # six trees, twice
    # A limited request still gets its candidates one by one.
    limited = hosts.get(QUERY + "&limit=7", version)
    assert len(limited.json["allocation_requests"]) == 7
    assert hosts.get(QUERY + "&limit=7", version).text == limited.text
    assert len(unpacked) == 12


def test_a_host_that_changed_is_searched_again(hosts, unpacked):
    first = hosts.get(QUERY).json
    hosts.get(QUERY)
    hosts.set_inventory("h2d0", {"CUSTOM_DEVICE": {"total": 1, "reserved": 1}})
    after = hosts.get(QUERY).json
    assert len(after["allocation_requests"]) == 72 - 6
    assert hosts.get(QUERY).text == hosts.get(QUERY).text
    gone = hosts.uuids["h2d0"]
    assert [ar for ar in first["allocation_requests"] if gone not in ar["allocations"]] \
        == after["allocation_requests"]


def test_before_134_nothing_is_packed(hosts, unpacked):
    first = hosts.get(QUERY, "1.33")
    assert hosts.get(QUERY, "1.33").text == first.text
    assert unpacked == []


def test_a_world_read_before_the_fork_packs_too(hosts, unpacked, conf, db):
    # allotment-api's shared world: read by the parent process, which builds
    # no application, then served by each worker's.
    shared = setup.load_world(db)
    api = Client(create_app(conf, db=db, world=shared))
    path = f"/allocation_candidates?{QUERY}"
    first = api.get(path)
    assert len(first.json["allocation_requests"]) == 72 and unpacked == []
    assert api.get(path).text == first.text
    assert unpacked == [12] * 6
