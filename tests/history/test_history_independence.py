"""History never changes an answer.

The same random world is written twice, on two databases, in two different
orders (providers created, their inventories, traits and aggregates set, and
consumers' allocations written in independently drawn orders), and read a
third time by a fresh replica of the first database, as a new process or
another host would read it.  A set of requests, standard and extended, must
get byte-identical bodies from all three.  Every tie the answers break
(which of equally free providers a ``can_split`` amount goes to first, the
order of candidates, the provider ``explain`` names) must be broken by the
data, never by the order the process learnt of the providers.

Provider listings follow the database's creation order, as upstream's do;
they are compared between the first database's two replicas only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from allotment.server.app import create_app
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration
from tests.conftest import clean, make_conf
from tests.harness.wsgi_client import Client

EXAMPLES = int(os.environ.get("ALLOTMENT_HISTORY_EXAMPLES", "30"))
EXT = {"Allotment-Extensions": "1"}
SHARES = "MISC_SHARES_VIA_AGGREGATE"
AGGREGATE = "5f4bd6a2-1b2b-4f0c-8f0b-00000000a661"
_REQUEST_ID = re.compile(r'"request_id":"req-[0-9a-f-]+"')


@dataclass
class Provider:
    uuid: str
    parent: str | None
    inventory: dict[str, dict]
    traits: list[str] = field(default_factory=list)
    aggregates: list[str] = field(default_factory=list)


@dataclass
class World:
    providers: list[Provider]
    # consumer uuid -> {provider uuid: {class: amount}}
    allocations: dict[str, dict[str, dict[str, int]]]


def _inventory(total: int, **extra: int) -> dict:
    return {"total": total, **extra}


@st.composite
def worlds(draw) -> World:
    providers: list[Provider] = []
    uuids = iter(draw(st.lists(st.uuids(version=4), min_size=30, max_size=30, unique=True)))
    for _ in range(draw(st.integers(1, 3))):
        root = str(next(uuids))
        root_inv = {}
        if draw(st.booleans()):
            root_inv["DISK_GB"] = _inventory(draw(st.sampled_from([100, 200])))
        providers.append(Provider(root, None, root_inv,
                                  ["CUSTOM_GOLD"] if draw(st.booleans()) else [],
                                  [AGGREGATE] if draw(st.booleans()) else []))
        # Children mostly alike, so that free capacities tie.
        for _ in range(draw(st.integers(0, 3))):
            inv = {"VCPU": _inventory(draw(st.sampled_from([4, 4, 8])),
                                      max_unit=draw(st.sampled_from([4, 8]))),
                   "MEMORY_MB": _inventory(draw(st.sampled_from([2048, 2048, 4096])),
                                           step_size=draw(st.sampled_from([1, 256])))}
            child = Provider(str(next(uuids)), root, inv,
                             ["CUSTOM_GOLD"] if draw(st.booleans()) else [])
            providers.append(child)
            if draw(st.booleans()):
                providers.append(Provider(str(next(uuids)), child.uuid, {
                    "VCPU": _inventory(4)}))
        if not any(p.parent == root for p in providers):
            root_inv["VCPU"] = _inventory(draw(st.sampled_from([4, 8])))
            root_inv["MEMORY_MB"] = _inventory(2048)
    if draw(st.booleans()):
        providers.append(Provider(str(next(uuids)), None,
                                  {"DISK_GB": _inventory(draw(st.sampled_from([100, 300])))},
                                  [SHARES], [AGGREGATE]))
    allocations: dict[str, dict[str, dict[str, int]]] = {}
    vcpu_holders = [p for p in providers if "VCPU" in p.inventory]
    held: dict[str, int] = {}
    for _ in range(draw(st.integers(0, 3))):
        holder = draw(st.sampled_from(vcpu_holders))
        amount = draw(st.integers(1, 2))
        # Only what fits: three consumers of 2 would not on a host of 4.
        if held.get(holder.uuid, 0) + amount > holder.inventory["VCPU"]["total"]:
            continue
        held[holder.uuid] = held.get(holder.uuid, 0) + amount
        allocations[str(next(uuids))] = {holder.uuid: {"VCPU": amount}}
    return World(providers, allocations)


def _topological(providers: list[Provider], order: list[int]) -> list[Provider]:
    """``providers`` in ``order`` as far as parents come before children."""
    placed: set[str] = set()
    pending = [providers[i] for i in order]
    out: list[Provider] = []
    while pending:
        for p in pending:
            if p.parent is None or p.parent in placed:
                out.append(p)
                placed.add(p.uuid)
                pending.remove(p)
                break
    return out


@dataclass
class Orders:
    create: list[int]
    inventory: list[int]
    tags: list[int]
    consumers: list[int]


def orders(world: World) -> st.SearchStrategy[Orders]:
    n = len(world.providers)
    return st.builds(Orders, st.permutations(range(n)), st.permutations(range(n)),
                     st.permutations(range(n)),
                     st.permutations(range(len(world.allocations))))


def _ok(resp, *statuses) -> None:
    assert resp.status in statuses, resp


def write(api: Client, world: World, order: Orders) -> None:
    _ok(api.put("/traits/CUSTOM_GOLD"), 201, 204)
    for p in _topological(world.providers, order.create):
        body = {"name": f"rp-{p.uuid}", "uuid": p.uuid}
        if p.parent:
            body["parent_provider_uuid"] = p.parent
        _ok(api.post("/resource_providers", json=body), 200)
    generation = dict.fromkeys((p.uuid for p in world.providers), 0)
    for i in order.inventory:
        p = world.providers[i]
        if not p.inventory:
            continue
        # One class at a time, so providers also learn classes in different orders.
        for rc in sorted(p.inventory, reverse=bool(i % 2)):
            resp = api.post(f"/resource_providers/{p.uuid}/inventories", json={
                "resource_class": rc, "resource_provider_generation": generation[p.uuid],
                **p.inventory[rc]})
            _ok(resp, 201)
            generation[p.uuid] = resp.json["resource_provider_generation"]
    for i in order.tags:
        p = world.providers[i]
        if p.traits:
            resp = api.put(f"/resource_providers/{p.uuid}/traits", json={
                "traits": p.traits, "resource_provider_generation": generation[p.uuid]})
            _ok(resp, 200)
            generation[p.uuid] = resp.json["resource_provider_generation"]
        if p.aggregates:
            resp = api.put(f"/resource_providers/{p.uuid}/aggregates", json={
                "aggregates": p.aggregates, "resource_provider_generation": generation[p.uuid]})
            _ok(resp, 200)
            generation[p.uuid] = resp.json["resource_provider_generation"]
    consumers = list(world.allocations)
    for i in order.consumers:
        consumer = consumers[i]
        _ok(api.put(f"/allocations/{consumer}", json={
            "allocations": {u: {"resources": r} for u, r in world.allocations[consumer].items()},
            "project_id": "p", "user_id": "u", "consumer_generation": None}, version="1.28"), 204)


CANDIDATES = [
    ("latest", "resources=VCPU:1"),
    ("latest", "resources=VCPU:1,MEMORY_MB:512"),
    ("latest", "resources=VCPU:1,DISK_GB:10"),
    ("latest", "resources=VCPU:2&limit=2"),
    ("latest", "resources1=VCPU:1&resources2=VCPU:1&group_policy=none"),
    ("latest", "resources1=VCPU:1&resources2=MEMORY_MB:256&group_policy=isolate&limit=3"),
    ("latest", "resources=VCPU:1&required=CUSTOM_GOLD"),
    ("1.29", "resources=VCPU:1&limit=1"),
    ("1.27", "resources=MEMORY_MB:256&resources1=VCPU:1&group_policy=none&limit=2"),
    ("1.26", "resources=VCPU:1,MEMORY_MB:1024&limit=1"),
    ("1.12", "resources=VCPU:1"),
]
EXTENDED = [
    "resources=VCPU:5&can_split=VCPU",
    "resources=VCPU:9&can_split=VCPU",
    "resources=MEMORY_MB:2500&can_split=MEMORY_MB",
    "resources=VCPU:3,MEMORY_MB:5000&can_split=VCPU,MEMORY_MB",
    "resources=VCPU:12,MEMORY_MB:512&can_split=VCPU&limit=2",
    "resources=VCPU:6&explain=true",
    "resources=VCPU:5,MEMORY_MB:4096&explain=true&can_split=VCPU",
    "resources_A=VCPU:1&resources_B=VCPU:1&isolate=_A,_B",
    "resources=VCPU:1&explain=true&required=CUSTOM_GOLD",
]


def answers(api: Client, world: World, listings: bool) -> dict[str, str]:
    out = {}
    for version, query in CANDIDATES:
        out[f"{version} {query}"] = api.get(f"/allocation_candidates?{query}",
                                            version=version).text
    for query in EXTENDED:
        out[f"ext {query}"] = api.get(f"/allocation_candidates?{query}", headers=EXT).text
    for p in world.providers:
        out[f"usages {p.uuid}"] = api.get(f"/resource_providers/{p.uuid}/usages").text
        out[f"provider {p.uuid}"] = api.get(f"/resource_providers/{p.uuid}").text
    out = {k: _REQUEST_ID.sub("", v) for k, v in out.items()}
    if listings:
        for query in ("", "?resources=VCPU:1", "?in_tree=" + world.providers[0].uuid,
                      "?member_of=" + AGGREGATE, "?required=CUSTOM_GOLD"):
            out[f"list {query}"] = api.get(f"/resource_providers{query}").text
    return out


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    made = []
    for name in ("first", "second"):
        url = f"sqlite:///{tmp_path_factory.mktemp('history') / name}.sqlite"
        database = db_mod.Database(db_mod.create_engine(url))
        migration.upgrade(database.engine)
        setup.sync_standards(database)
        made.append((url, database))
    yield made
    for _, database in made:
        database.dispose()


def _api(url: str, database: db_mod.Database) -> Client:
    return Client(create_app(make_conf(url), db=database))


# No shrinking: a failing example is printed as drawn (small enough to
# read), and CI's time is not spent minimising it.
_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                     phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow, HealthCheck.data_too_large])


def test_the_same_world_answers_the_same_whatever_its_history(databases):
    found_candidates: list[bool] = []

    @_SETTINGS
    @given(data=st.data())
    def one_world(data):
        world = data.draw(worlds(), label="world")
        first_order = data.draw(orders(world), label="first order")
        second_order = data.draw(orders(world), label="second order")
        (url1, db1), (url2, db2) = databases
        clean(db1)
        clean(db2)
        first, second = _api(url1, db1), _api(url2, db2)
        write(first, world, first_order)
        write(second, world, second_order)
        # A new replica of the first database: the world read whole, in one go.
        fresh_db = db_mod.Database(db_mod.create_engine(url1))
        try:
            fresh = _api(url1, fresh_db)
            a = answers(first, world, listings=True)
            b = answers(second, world, listings=False)
            c = answers(fresh, world, listings=True)
        finally:
            fresh_db.dispose()
        differ = [k for k in a if a[k] != c.get(k)]
        assert not differ, f"a fresh replica answers differently: {differ}"
        differ = [k for k in b if a[k] != b[k]]
        assert not differ, f"another write order answers differently: {differ}"
        found_candidates.append(any('"allocation_requests":[{' in v for v in a.values()))

    one_world()
    # The requests are not vacuous: in some worlds they find candidates (a
    # world whose hosts are all full finds none, and that is no failure).
    assert any(found_candidates)
