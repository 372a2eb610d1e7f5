"""Property tests of the extension features and of explain, against the oracle.

The oracle of ``test_candidates_properties`` enumerates every candidate of
every root; the extension constraints are checked here on its answers,
straight from their documented definitions, sharing no code with
``allotment.engine.extensions`` or ``allotment.engine.explain``.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from test_candidates_properties import (
    AGGS,
    PROFILE,
    Oracle,
    groups,
    key,
    requests,
    worlds,
)

from allotment.engine import AllocationCandidatesRequest, SearchGroup, Snapshot
from allotment.engine import extensions as ext_engine
from allotment.engine.explain import explain
from allotment.engine.extensions import ExtendedRequest

# For properties that only re-check what the ones at full strength cover.
LIGHT = settings(PROFILE, max_examples=max(50, PROFILE.max_examples // 3))


@st.composite
def extended_scenarios(draw):
    world = draw(worlds(roomy=draw(st.booleans())))
    uuids = [r.uuid for r in world]
    base = draw(requests(uuids))
    if base.microversion < (1, 36):
        base = dataclasses.replace(base, microversion=(1, 39), nested_aware=True)
    suffixes = sorted(g.suffix for g in base.groups if g.suffix)
    agg_sets = st.lists(st.frozensets(st.sampled_from(AGGS), min_size=1, max_size=2),
                        max_size=2)
    root_member_of = tuple(draw(agg_sets))
    forbidden_root = frozenset(draw(st.lists(st.sampled_from(AGGS), max_size=1)))
    isolate: tuple = ()
    if len(suffixes) > 1 and draw(st.booleans()):
        isolate = (frozenset(draw(st.lists(st.sampled_from(suffixes), min_size=2,
                                           unique=True))),)
        base = dataclasses.replace(base, group_policy=None)
    anti: tuple = ()
    if len(suffixes) > 1 and draw(st.booleans()):
        order = draw(st.permutations(suffixes))
        cut = draw(st.integers(1, len(order) - 1))
        positive, negative = frozenset(order[:cut]), frozenset(order[cut:])
        anti = ((positive, negative),)
        base = dataclasses.replace(
            base, same_subtrees=(*base.same_subtrees, positive))
    can_split: frozenset = frozenset()
    unsuffixed = base.group("")
    if unsuffixed is not None and unsuffixed.resources and draw(st.booleans()):
        can_split = frozenset(draw(st.lists(st.sampled_from(sorted(unsuffixed.resources)),
                                            min_size=1, unique=True)))
        # Mostly more than one small provider holds, so that dividing matters.
        bigger = {rc: draw(st.sampled_from([a, 3, 5, 7, 10])) if rc in can_split else a
                  for rc, a in unsuffixed.resources.items()}
        groups = tuple(dataclasses.replace(g, resources=bigger) if not g.suffix else g
                       for g in base.groups)
        base = dataclasses.replace(base, groups=groups)
    return world, ExtendedRequest(
        base, root_member_of=root_member_of, forbidden_root_aggs=forbidden_root,
        isolate=isolate, anti_affinity=anti, can_split=can_split)


@st.composite
def split_scenarios(draw):
    """Roomy trees and an unsuffixed group asking more than one provider
    holds, sometimes with a suffixed group beside it: dividing matters."""
    world = draw(worlds(roomy=True))
    uuids = [r.uuid for r in world]
    base = draw(requests(uuids))
    unsuffixed = draw(groups("", uuids, True))
    amounts = {rc: draw(st.sampled_from([2, 3, 5, 7, 10])) for rc in unsuffixed.resources}
    if draw(st.booleans()):
        # Mostly no filters, so that several providers of a tree qualify.
        unsuffixed = SearchGroup(suffix="", resources=amounts)
    unsuffixed = dataclasses.replace(unsuffixed, resources=amounts)
    suffixed = tuple(g for g in base.groups if g.suffix and g.resources)[:1]
    base = AllocationCandidatesRequest.for_microversion(
        (1, 39), groups=(unsuffixed, *suffixed), group_policy="none")
    can_split = frozenset(draw(st.lists(st.sampled_from(sorted(amounts)), min_size=1,
                                        unique=True)))
    return world, ExtendedRequest(base, can_split=can_split)


class ExtOracle(Oracle):
    def root_aggs_ok(self, ext: ExtendedRequest, r: str) -> bool:
        aggs = self.by[r].aggregates
        return (all(aggs & s for s in ext.root_member_of)
                and not aggs & ext.forbidden_root_aggs)

    def accepts(self, ext: ExtendedRequest, mapping: dict) -> bool:
        for entry in ext.isolate:
            picked = [next(iter(mapping[s])) for s in entry]
            if len(set(picked)) != len(picked):
                return False
        for positive, negative in ext.anti_affinity:
            picks = set().union(*(mapping[s] for s in positive))
            tops = [t for t in picks
                    if all(t in self.ancestors_or_self(q) for q in picks)]
            if not tops:
                return False
            for s in negative:
                if any(tops[0] in self.ancestors_or_self(q) for q in mapping[s]):
                    return False
        return True

    def solve_ext_root(self, ext: ExtendedRequest, r: str) -> set:
        if not self.root_aggs_ok(ext, r):
            return set()
        found = {c for c in self.solve_root(ext.base, r) if self.accepts(ext, dict(c[1]))}
        if ext.can_split:
            found |= self.split_candidates(ext, r)
        return found

    # -- can_split, from its documented definition ---------------------------

    def split_candidates(self, ext: ExtendedRequest, r: str) -> set:
        u = ext.base.group("")
        rest_groups = []
        for g in ext.base.groups:
            if g.suffix:
                rest_groups.append(g)
                continue
            rest = {rc: a for rc, a in g.resources.items() if rc not in ext.can_split}
            if rest:
                rest_groups.append(dataclasses.replace(g, resources=rest, required_traits=()))
        rest_base = dataclasses.replace(ext.base, groups=tuple(rest_groups))
        if any(g.in_tree is not None and g.in_tree not in self.by for g in ext.base.groups):
            return set()
        out = set()
        for totals, mapping in self.solve_root(rest_base, r):
            mapping = dict(mapping)
            if not self.accepts(ext, mapping):
                continue
            classes = sorted((rc, a) for rc, a in u.resources.items() if rc in ext.can_split)
            for placed, picks in self.place(u, r, classes, dict(totals), [], False):
                providers = set(mapping.get("", ())) | set(picks)
                traits = set().union(*(self.by[p].traits for p in providers))
                if not all(traits & s for s in u.required_traits):
                    continue
                full = dict(mapping)
                full[""] = frozenset(providers)
                out.add((frozenset(placed.items()), frozenset(full.items())))
        return out

    def free(self, p: str, rc: str, totals: dict) -> int:
        inv = self.by[p].inventories[rc]
        return inv.capacity - inv.used - totals.get((p, rc), 0)

    def place(self, u, r, classes, totals, picks, divided):
        if not classes:
            if divided:
                yield totals, picks
            return
        (rc, a), rest = classes[0], classes[1:]
        singles = [p for p in self.unsuffixed_sources(u, r, rc, a)
                   if self.free(p, rc, totals) >= a
                   and totals.get((p, rc), 0) + a <= self.by[p].inventories[rc].max_unit]
        if singles:
            for p in singles:
                after = dict(totals)
                after[(p, rc)] = after.get((p, rc), 0) + a
                yield from self.place(u, r, rest, after, [*picks, p], divided)
            return
        home = [p for p in self.by if self.root(p) == r and rc in self.by[p].inventories
                and not self.by[p].traits & u.forbidden_traits
                and not u.forbidden_aggs & (self.by[p].aggregates | self.by[r].aggregates)
                and (u.in_tree is None or self.root(u.in_tree) == r)
                and (not u.member_of or self.in_all(p, u.member_of)
                     or self.in_all(r, u.member_of))]
        home.sort(key=lambda p: (-self.free(p, rc, totals), p))
        after, left, used = dict(totals), a, []
        for p in home:
            inv = self.by[p].inventories[rc]
            most = min(left, self.free(p, rc, totals), inv.max_unit - totals.get((p, rc), 0))
            take = most - most % inv.step_size if most > 0 else 0
            if take > 0 and take >= inv.min_unit:
                after[(p, rc)] = after.get((p, rc), 0) + take
                used.append(p)
                left -= take
                if not left:
                    yield from self.place(u, r, rest, after, picks + used, True)
                    return

    def solve_ext(self, ext: ExtendedRequest) -> set:
        return set().union(*(self.solve_ext_root(ext, r) for r in self.roots()))


def _check_against_the_oracle(world, ext: ExtendedRequest) -> list:
    """The engine's answer (as keys), checked against the oracle's."""
    got = [key(c) for c in ext_engine.find_extended_candidates(Snapshot.build(world), ext)]
    assert len(got) == len(set(got)), "duplicate candidates"
    assert set(got) == ExtOracle(world).solve_ext(ext)
    return got


@PROFILE
@given(extended_scenarios())
def test_extended_engine_matches_brute_force(scenario):
    _check_against_the_oracle(*scenario)


@PROFILE
@given(split_scenarios())
def test_split_engine_matches_brute_force(scenario):
    world, ext = scenario
    got = _check_against_the_oracle(world, ext)
    # Only additions, and the standard candidates keep their order.
    plain = [key(c) for c in ext_engine.find_extended_candidates(Snapshot.build(world), ext.base)]
    assert [k for k in got if k in set(plain)] == plain


@LIGHT
@given(extended_scenarios(), st.integers(1, 4))
def test_extended_limit_truncates_the_full_answer(scenario, limit):
    world, ext = scenario
    snap = Snapshot.build(world)
    everything = [key(c) for c in ext_engine.find_extended_candidates(snap, ext)]
    limited = [key(c) for c in ext_engine.find_extended_candidates(snap, ext, limit=limit)]
    # A limit keeps candidates from as many trees as it can (as the
    # standard search does), so it is a subset of the full answer, not
    # always its first candidates.
    assert len(limited) == min(limit, len(everything))
    assert set(limited) <= set(everything)
    assert len(set(limited)) == len(limited)
    breadth = [key(c) for c in ext_engine.find_extended_candidates(
        snap, ext, strategy="breadth-first")]
    assert sorted(breadth, key=repr) == sorted(everything, key=repr)


def _relaxed(ext: ExtendedRequest, reason: dict) -> ExtendedRequest:
    """The request without the constraint a combined reason names."""
    base = ext.base
    if reason["reason"] == "same_subtree":
        named = frozenset(reason["same_subtree"])
        rest = [s for s in base.same_subtrees if s != named]
        # ``same_subtree=_1,_2,!_0`` is one constraint: its positive part
        # failing is reported as same_subtree, and lifting it lifts the
        # exclusion built on it too.
        anti = tuple(a for a in ext.anti_affinity if a[0] != named)
        return dataclasses.replace(ext, base=dataclasses.replace(base, same_subtrees=rest),
                                   anti_affinity=anti)
    if reason["reason"] == "same_subtree_anti_affinity":
        return dataclasses.replace(ext, anti_affinity=())
    if reason["reason"] == "isolation" and "group_policy" in reason:
        return dataclasses.replace(ext, base=dataclasses.replace(base, group_policy="none"))
    if reason["reason"] == "isolation":
        return dataclasses.replace(ext, isolate=())
    assert reason["reason"] == "required_trait_combined"
    groups = tuple(dataclasses.replace(g, required_traits=()) if not g.suffix else g
                   for g in base.groups)
    return dataclasses.replace(ext, base=dataclasses.replace(base, groups=groups))


@PROFILE
@given(extended_scenarios())
def test_explain_reports_exactly_the_trees_without_candidates(scenario):
    world, ext = scenario
    oracle = ExtOracle(world)
    snap = Snapshot.build(world)
    result = explain(snap, ext, tree_limit=1000)
    assert not result.truncated and result.trees_examined == len(oracle.roots())
    assert result.trees_cut_by_limit == 0
    failing = {t.root: t.as_dict() for t in result.failing}
    for r in oracle.roots():
        has = bool(oracle.solve_ext_root(ext, r))
        assert (r not in failing) == has, (r, failing.get(r))
        if has:
            continue
        reason = failing[r]
        groups = {g.suffix: g for g in ext.base.groups}
        kind = reason["reason"]
        if kind in ("root_required", "root_forbidden"):
            assert not oracle.root_ok(ext.base, r)
        elif kind == "root_member_of":
            assert not oracle.root_aggs_ok(ext, r)
        elif "group" in reason and kind != "required_trait_combined":
            g = groups[reason["group"]]
            if g.in_tree is not None and g.in_tree not in oracle.by:
                # An unknown in_tree provider: nothing can serve the group;
                # a filter checked before in_tree may be the first to say so.
                assert kind in ("in_tree", "no_inventory", "unmatchable", "member_of",
                                "required_trait", "forbidden_trait"), reason
            elif g.suffix:
                assert not oracle.suffixed_sources(g, r), reason
            else:
                per_rc = {rc: oracle.unsuffixed_sources(g, r, rc, a)
                          for rc, a in g.resources.items()}
                if all(per_rc.values()):
                    have = set().union(*(oracle.by[u].traits
                                         for us in per_rc.values() for u in us))
                    assert any(not have & s for s in g.required_traits), reason
        elif kind != "capacity_combined":
            # Lifting the named constraint is what lets the tree yield.
            assert oracle.solve_ext_root(_relaxed(ext, reason), r), reason


@LIGHT
@given(extended_scenarios())
def test_explained_sharing_providers_cannot_serve_the_groups(scenario):
    world, ext = scenario
    oracle = ExtOracle(world)
    result = explain(Snapshot.build(world), ext, tree_limit=1000)
    groups = {g.suffix: g for g in ext.base.groups}
    for reason in result.sharing:
        s, g = reason.root, groups[reason.group]
        assert oracle.shares(s)
        assert set(g.resources) & set(oracle.by[s].inventories)
        served = oracle.served_roots(s) - {oracle.root(s)}
        if reason.reason == "serves_no_tree":
            assert not served
        elif g.in_tree is not None and g.in_tree not in oracle.by:
            assert reason.reason in ("in_tree", "no_inventory"), reason
        elif g.suffix:
            assert not oracle.single_ok(g, s), reason
        else:
            wanted = [(rc, a) for rc, a in g.resources.items()
                      if rc in oracle.by[s].inventories]
            assert any(all(s not in oracle.unsuffixed_sources(g, r, rc, a) for r in served)
                       for rc, a in wanted), reason


@LIGHT
@given(extended_scenarios(), st.integers(1, 3))
def test_explain_counts_trees_cut_off_by_limit(scenario, limit):
    world, ext = scenario
    snap = Snapshot.build(world)
    answer = list(ext_engine.find_extended_candidates(snap, ext, limit=limit))
    anchors = {c.anchor for c in answer}
    oracle = ExtOracle(world)
    yielding = [r for r in oracle.roots() if oracle.solve_ext_root(ext, r)]
    if len(answer) == limit:
        # The answer may have been cut short: trees not in it are counted.
        result = explain(snap, ext, tree_limit=1000, answered_roots=anchors)
        assert result.trees_cut_by_limit == len(set(yielding) - anchors)
    else:
        result = explain(snap, ext, tree_limit=1000)
        assert result.trees_cut_by_limit == 0
    assert result.trees_with_candidates == len(yielding)
    small = explain(snap, ext, tree_limit=1)
    assert len(small.failing) <= 1 and len(small.sharing) <= 1
    everything = explain(snap, ext, tree_limit=1000)
    assert small.sharing == everything.sharing[:1]
    assert small.truncated == (small.trees_examined < len(oracle.roots())
                               or len(everything.sharing) > 1)
