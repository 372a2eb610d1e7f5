"""A world that meets providers whose parent links are broken in the
database (a cycle, a parent that is not there) keeps serving everything
else, and refuses only requests about those providers, saying why."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from allotment.storage import feed, tables
from allotment.storage.loader import LoadedProvider
from allotment.world.model import CYCLE, NO_ROOT, split_damaged
from tests.api.test_resource_providers import create


def _loaded(links: dict[str, str | None]) -> dict[int, LoadedProvider]:
    return {n: LoadedProvider(u, u, 0, p, None, None, None, None, {}, set(), set())
            for n, (u, p) in enumerate(links.items())}


def test_split_damaged_keeps_every_provider_that_reaches_a_root():
    loaded = _loaded({"r": None, "a": "r", "b": "a", "x": "y", "y": "z", "z": "x",
                      "under-x": "x", "orphan": "gone", "under-orphan": "orphan"})
    healthy, damaged = split_damaged(loaded)
    assert {p.uuid for p in healthy.values()} == {"r", "a", "b"}
    assert damaged == {"x": CYCLE, "y": CYCLE, "z": CYCLE, "under-x": NO_ROOT,
                       "orphan": NO_ROOT, "under-orphan": NO_ROOT}
    assert split_damaged(_loaded({"r": None, "a": "r"}))[1] == {}


def _make_cycle(db, first: str, second: str, how: str) -> None:
    """What two re-parentings committed at once could leave: each provider
    the other's parent.  Processes reload the two trees (as the feed rows of
    two moves would name them), or everything (a reset)."""
    rp = tables.resource_providers
    with db.write() as conn:
        ids = dict(conn.execute(sa.select(rp.c.uuid, rp.c.id)
                                .where(rp.c.uuid.in_([first, second]))).all())
        conn.execute(sa.update(rp).where(rp.c.id == ids[first])
                     .values(parent_provider_id=ids[second], root_provider_id=ids[second]))
        conn.execute(sa.update(rp).where(rp.c.id == ids[second])
                     .values(parent_provider_id=ids[first], root_provider_id=ids[first]))
        if how == "reset":
            feed.note_reset(conn)
        else:
            feed.note_roots(conn, ids.values())


@pytest.mark.parametrize("how", ["trees", "reset"])
def test_a_cycle_in_the_tables_refuses_only_what_it_touches(api, db, how):
    healthy = create(api, "healthy")
    assert api.put(f"/resource_providers/{healthy}/inventories", json={
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 4}}}).status == 200
    p1, p2 = create(api, "p1"), create(api, "p2")
    child = create(api, "child", parent=p2)
    assert api.get("/resource_providers").status == 200  # the world is built
    _make_cycle(db, p1, p2, how)

    listed = api.get("/resource_providers")
    assert listed.status == 200
    assert [p["uuid"] for p in listed.json["resource_providers"]] == [healthy]
    assert api.get(f"/resource_providers/{healthy}").status == 200
    candidates = api.get("/allocation_candidates?resources=VCPU:1")
    assert candidates.status == 200
    assert list(candidates.json["provider_summaries"]) == [healthy]

    for damaged, why in ((p1, CYCLE), (p2, CYCLE), (child, NO_ROOT)):
        for path in (f"/resource_providers/{damaged}",
                     f"/resource_providers/{damaged}/usages",
                     f"/resource_providers?in_tree={damaged}"):
            resp = api.get(path)
            assert resp.status == 409, (path, resp)
            assert why in resp.error()["detail"] and damaged in resp.error()["detail"]
