"""Snapshot.build does not depend on the order records arrive in."""

from __future__ import annotations

import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_candidates_properties import key, requests, worlds
from test_usage_overlay import usages, with_used

from allotment.engine import Snapshot, find_candidates

PROFILE = settings.get_profile(os.environ.get("ENGINE_HYPOTHESIS_PROFILE", "engine-ci"))


@PROFILE
@given(st.data())
def test_record_order_changes_nothing(data):
    world = data.draw(worlds(roomy=data.draw(st.booleans())))
    world = with_used(world, data.draw(usages(world)))
    req = data.draw(requests([r.uuid for r in world]))
    shuffled = list(world)
    random.Random(data.draw(st.integers(0, 2**32))).shuffle(shuffled)
    ordered, mixed = Snapshot.build(sorted(world, key=lambda r: r.uuid)), Snapshot.build(shuffled)
    for name in ("uuids", "parent", "root", "depth", "traits", "aggregates",
                 "inventory", "roots", "is_sharing", "sharing"):
        assert getattr(mixed, name) == getattr(ordered, name), name
    assert dict(mixed.sharing_by_anchor) == dict(ordered.sharing_by_anchor)
    assert [mixed.get(u) for u in mixed.uuids] == [ordered.get(u) for u in ordered.uuids]
    for rec in world:
        # Records come back as given, with the root filled in.
        got = mixed.get(rec.uuid)
        assert got.name == rec.name and got.inventories == rec.inventories
        assert got.traits == rec.traits and got.aggregates == rec.aggregates
    assert ([key(c) for c in find_candidates(mixed, req)]
            == [key(c) for c in find_candidates(ordered, req)])
