"""engine.first_round through engine.rounds: an answer whose first round is
taken in blocks of trees is, byte for byte, the answer taken a tree at a
time, through claims, new and deleted hosts, rotation and any limit; and a
block is made again only when one of its trees changed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allotment.engine import first_round, rounds
from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup

# Large enough that no round is ever taken in blocks.
TREE_BY_TREE = 10**9


def uuid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


class Encoder:
    """A candidate as its providers' UUIDs, a tree as its members', each
    with its comma first, as the API's encoder writes its pieces."""

    shape = "test"

    def candidate(self, cand) -> bytes:
        return ("," + "+".join(sorted(str(cand.allocations)))).encode()

    def tree(self, summaries: tuple) -> bytes:
        return ("," + "+".join(summaries)).encode()


def host(n: int, vcpus: int, children: int) -> list[ProviderRecord]:
    """A host with ``vcpus`` VCPUs, or as many on each of ``children``
    nodes: such a host gives a candidate per node that fits."""
    root = ProviderRecord(uuid=uuid(n), generation=0,
                          inventories={} if children else {"VCPU": Inventory(vcpus)})
    return [root, *(ProviderRecord(uuid=uuid(n * 100 + 10**6 + c), parent_uuid=uuid(n),
                                   generation=0, inventories={"VCPU": Inventory(vcpus)})
                    for c in range(children))]


def vcpus_of(records: list[ProviderRecord]) -> dict[str, int]:
    return {r.uuid: r.inventories["VCPU"].total for r in records if "VCPU" in r.inventories}


def ask(snap: LiveSnapshot, sections: dict, block: int, limit: int, rotate: bool,
        vcpus: int, used: dict | None = None) -> tuple[bytes, bytes, int]:
    """The answer's requests and summaries joined, and its count; a
    provider's summary is its UUID and what ``used`` says it holds."""
    used = used or {}
    first_round.BLOCK = block
    request = AllocationCandidatesRequest((SearchGroup(resources={"VCPU": vcpus}),),
                                          limit=limit)
    found = rounds.assemble(snap, lambda kind: sections.setdefault(kind, {}), 0, request,
                            Encoder(),
                            lambda members: tuple(f"{snap.uuids[m]}={used.get(snap.uuids[m], 0)}"
                                                  for m in members),
                            rotate=rotate)
    return b"".join(found.requests), b"".join(found.summaries), found.count


hosts = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=0, max_size=40)
steps = st.lists(st.one_of(
    st.tuples(st.just("ask"), st.integers(1, 60), st.booleans(), st.integers(1, 2)),
    st.tuples(st.just("claim"), st.integers(0, 10**6), st.integers(-2, 2)),
    st.tuples(st.just("host"), st.integers(0, 3), st.integers(0, 2)),
    st.tuples(st.just("drop"), st.integers(0, 10**6)),
), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(world=hosts, steps=steps, block=st.integers(1, 6))
def test_blocks_answer_as_trees_one_at_a_time(world, steps, block):
    records = [r for n, (vcpus, children) in enumerate(world) for r in host(n, vcpus, children)]
    snap = LiveSnapshot.build(records)
    totals, used = vcpus_of(records), {}
    in_blocks: dict = {}
    one_by_one: dict = {}
    added = len(world)
    saved = first_round.BLOCK
    try:
        for step in steps:
            roots = [snap.uuids[r] for r in snap.roots]
            if step[0] == "ask":
                _, limit, rotate, vcpus = step
                got = ask(snap, in_blocks, block, limit, rotate, vcpus, used)
                want = ask(snap, one_by_one, TREE_BY_TREE, limit, rotate, vcpus, used)
                assert got == want
                # And with nothing kept at all.
                assert ask(snap, {}, TREE_BY_TREE, limit, rotate, vcpus, used) == want
            elif step[0] == "claim" and roots:
                # On the host, or on a node of it: usage and generation move.
                live = [u for u in totals if u in snap.index]
                if not live:
                    continue
                target = live[step[1] % len(live)]
                if 0 <= used.get(target, 0) + step[2] <= totals[target]:
                    snap.add_usage([(target, "VCPU", step[2])])
                    used[target] = used.get(target, 0) + step[2]
                snap.set_generation(target, snap.generation_of(snap.index[target]) + 1)
            elif step[0] == "host":
                records = host(added, step[1], step[2])
                totals.update(vcpus_of(records))
                snap.replace_trees([], records)
                added += 1
            elif step[0] == "drop" and roots:
                snap.replace_trees([roots[step[1] % len(roots)]], [])
    finally:
        first_round.BLOCK = saved


def test_a_claim_makes_only_its_block_again(monkeypatch):
    snap = LiveSnapshot.build([r for n in range(100) for r in host(n, 4, 0)])
    sections: dict = {}
    made = []
    real = first_round._block

    def counted(kept, anchors, p, *args):
        before = kept.at.get(p)
        block = real(kept, anchors, p, *args)
        if block is not before:
            made.append(p)
        return block

    monkeypatch.setattr(first_round, "_block", counted)
    first = ask(snap, sections, 8, 100, False, 1)
    assert made == list(range(0, 96, 8))  # every whole block, the last 4 one at a time
    made.clear()
    assert ask(snap, sections, 8, 100, False, 1) == first
    assert made == []
    snap.add_usage([(uuid(42), "VCPU", 1)])
    snap.set_generation(uuid(42), 1)
    assert ask(snap, sections, 8, 100, False, 1) == ask(snap, {}, TREE_BY_TREE, 100, False, 1)
    assert made == [40]


def test_summaries_joined_for_one_kind_are_dropped_with_any_tree(monkeypatch):
    # Host 0 fits one VCPU only: a block's trees with a candidate are 0-3
    # for one kind and 1-3 for the other, whose summaries are joined apart.
    records = host(0, 1, 0) + [r for n in range(1, 8) for r in host(n, 3, 0)]
    snap = LiveSnapshot.build(records)
    sections: dict = {}
    used: dict = {}
    one, two = (ask(snap, sections, 4, 8, False, v, used) for v in (1, 2))
    assert one != two
    snap.add_usage([(uuid(2), "VCPU", 1)])
    snap.set_generation(uuid(2), 1)
    used[uuid(2)] = 1
    for vcpus in (1, 2):
        assert (ask(snap, sections, 4, 8, False, vcpus, used)
                == ask(snap, {}, TREE_BY_TREE, 8, False, vcpus, used))
