"""Snapshot.with_usage: the same topology with another usage, cheaply.

The reference is always a snapshot built from scratch from records carrying
the same usage; the overlay must be indistinguishable from it.
"""

from __future__ import annotations

import dataclasses
import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_candidates_properties import RCS, key, requests, worlds

from allotment.engine import (
    Inventory,
    ProviderRecord,
    Snapshot,
    find_candidates,
    provider_summary_uuids,
)

PROFILE = settings.get_profile(os.environ.get("ENGINE_HYPOTHESIS_PROFILE", "engine-ci"))


def with_used(records: list[ProviderRecord],
              used: dict[str, dict[str, int]]) -> list[ProviderRecord]:
    """``records`` rewritten to carry exactly ``used`` (missing: 0)."""
    return [
        dataclasses.replace(rec, inventories={
            rc: dataclasses.replace(inv, used=used.get(rec.uuid, {}).get(rc, 0))
            for rc, inv in rec.inventories.items()})
        for rec in records
    ]


@st.composite
def usages(draw, records: list[ProviderRecord]) -> dict[str, dict[str, int]]:
    """Usage for some providers, including classes they have no inventory of,
    zero amounts, and providers the snapshot does not know."""
    used: dict[str, dict[str, int]] = {}
    for rec in records:
        if draw(st.integers(0, 2)) == 0:
            continue
        used[rec.uuid] = {
            rc: draw(st.sampled_from([0, 1, 2, 3, 6]))
            for rc in draw(st.lists(st.sampled_from(RCS), unique=True, max_size=3))
        }
    if draw(st.booleans()):
        used["99999999-0000-0000-0000-000000000000"] = {"VCPU": 5}
    return used


@st.composite
def overlay_scenarios(draw):
    world = draw(worlds(roomy=draw(st.booleans())))
    base_used = draw(usages(world))
    used = draw(usages(world))
    return with_used(world, base_used), used, draw(requests([r.uuid for r in world]))


def everything(snap: Snapshot, req, **kwargs) -> list:
    return [(key(c), c.anchor) for c in find_candidates(snap, req, **kwargs)]


@PROFILE
@given(overlay_scenarios(), st.integers(1, 4), st.integers(0, 2**32))
def test_overlay_searches_like_a_snapshot_built_with_that_usage(scenario, limit, seed):
    records, used, req = scenario
    base = Snapshot.build(records)
    overlay = base.with_usage(used)
    fresh = Snapshot.build(with_used(records, used))
    # Same candidates in the same order, whatever the options.
    assert everything(overlay, req) == everything(fresh, req)
    assert everything(overlay, req, limit=limit) == everything(fresh, req, limit=limit)
    assert (everything(overlay, req, strategy="breadth-first")
            == everything(fresh, req, strategy="breadth-first"))
    assert (everything(overlay, req, randomize=True, rng=random.Random(seed))
            == everything(fresh, req, randomize=True, rng=random.Random(seed)))
    cands = list(find_candidates(overlay, req))
    for nested in (True, False):
        assert (provider_summary_uuids(overlay, cands, nested_aware=nested)
                == provider_summary_uuids(fresh, cands, nested_aware=nested))
    for rec in records:
        assert overlay.get(rec.uuid) == fresh.get(rec.uuid)
        assert overlay.resources_of(rec.uuid) == fresh.resources_of(rec.uuid)
        for rc in RCS:
            assert overlay.usage_of(rec.uuid, rc) == fresh.usage_of(rec.uuid, rc)


@PROFILE
@given(overlay_scenarios())
def test_overlay_leaves_the_base_untouched(scenario):
    records, used, req = scenario
    base = Snapshot.build(records)
    before = everything(base, req)
    records_before = [base.get(r.uuid) for r in records]
    used_before = {u: dict(m) for u, m in used.items()}
    overlay = base.with_usage(used)
    list(find_candidates(overlay, req))
    assert everything(base, req) == before
    assert [base.get(r.uuid) for r in records] == records_before
    # The base still reports the usage its records carried.
    for rec in records:
        for rc, inv in rec.inventories.items():
            assert base.usage_of(rec.uuid, rc) == inv.used
    assert used == used_before


def test_overlay_shares_the_static_indexes():
    records = [
        ProviderRecord(uuid="cn", inventories={"VCPU": Inventory(total=4, used=3)},
                       aggregates=frozenset({"agg"})),
        ProviderRecord(uuid="numa", parent_uuid="cn",
                       inventories={"VCPU": Inventory(total=4)}),
        ProviderRecord(uuid="ss", inventories={"DISK_GB": Inventory(total=10)},
                       traits=frozenset({"MISC_SHARES_VIA_AGGREGATE"}),
                       aggregates=frozenset({"agg"})),
    ]
    base = Snapshot.build(records)
    overlay = base.with_usage({"numa": {"VCPU": 4}})
    for name in ("uuids", "index", "parent", "root", "traits", "inventory",
                 "sharing_by_anchor", "anchors_of_sharing"):
        assert getattr(overlay, name) is getattr(base, name), name
    # Indexes built on first use by either are seen by both.
    assert overlay.agg_members is base.agg_members
    assert overlay.trees is base.trees
    assert base.usage_of("cn", "VCPU") == 3 and base.usage_of("numa", "VCPU") == 0
    assert overlay.usage_of("cn", "VCPU") == 0 and overlay.usage_of("numa", "VCPU") == 4
    assert overlay.resources_of("numa") == {"VCPU": (4, 4)}
    assert overlay.get("numa").inventories["VCPU"].used == 4
    assert overlay.get("numa").root_uuid == "cn"
    assert overlay.parent_uuid_of("numa") == "cn" and overlay.parent_uuid_of("cn") is None
    assert overlay.traits_of("ss") == {"MISC_SHARES_VIA_AGGREGATE"}
    assert base.by_rc == {"VCPU": (base.index["cn"], base.index["numa"]),
                          "DISK_GB": (base.index["ss"],)}
