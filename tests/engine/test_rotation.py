"""engine.rotation through engine.rounds: a rotating answer is the
deterministic rounds begun at the host the world's generations point at;
it moves with every write, and what the answers keep stays within twice
the widest answer's reach however far the start travels."""

from __future__ import annotations

from allotment.engine import rotation, rounds
from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from allotment.engine.request import AllocationCandidatesRequest, SearchGroup

HOSTS = [f"00000000-0000-0000-0000-{n:012d}" for n in range(200)]


class Encoder:
    """Writes a candidate as its host's UUID, a tree as its root's."""

    shape = "hosts"

    def candidate(self, cand) -> bytes:
        return cand.anchor.encode()

    def tree(self, summaries: tuple) -> bytes:
        return summaries[0].encode()


def world(hosts: int = len(HOSTS)) -> LiveSnapshot:
    return LiveSnapshot.build([
        ProviderRecord(uuid=h, inventories={"VCPU": Inventory(8)}, generation=0)
        for h in HOSTS[:hosts]])


def ask(snap: LiveSnapshot, sections: dict, limit: int, rotate: bool = True) -> list[str]:
    request = AllocationCandidatesRequest((SearchGroup(resources={"VCPU": 1}),), limit=limit)
    found = rounds.assemble(snap, lambda kind: sections.setdefault(kind, {}), 0, request,
                            Encoder(), lambda members: tuple(snap.uuids[m] for m in members),
                            rotate=rotate)
    assert [r.decode() for r in found.requests] != [] or limit == 0
    # Summaries: exactly the hosts of the candidates, in UUID order.
    assert [s.decode() for s in found.summaries] == sorted({r.decode() for r in found.requests})
    return [r.decode() for r in found.requests]


def write(snap: LiveSnapshot, host: str, step: int = 1) -> None:
    """A claim on ``host``: its usage and generation move."""
    snap.add_usage([(host, "VCPU", 1)])
    snap.set_generation(host, snap.generation_of(snap.index[host]) + step)


def test_rounds_start_where_the_generations_point_and_wrap_around():
    snap, sections = world(10), {}
    assert ask(snap, sections, 4) == HOSTS[:4]  # every generation 0: the first host
    write(snap, HOSTS[0], step=7)
    assert ask(snap, sections, 4) == HOSTS[7:10] + HOSTS[:1]
    # A limit past the hosts: each of them once, from the start round.
    assert ask(snap, sections, 30) == HOSTS[7:10] + HOSTS[:7]
    # Not rotating: the deterministic order, whatever the generations.
    assert ask(snap, {}, 4, rotate=False) == HOSTS[:4]


def test_each_write_moves_the_first_host_on():
    snap, sections = world(), {}
    firsts = []
    for _ in range(50):
        first = ask(snap, sections, 10)[0]
        firsts.append(first)
        write(snap, first)
    assert firsts == HOSTS[:50]


def test_what_is_kept_stays_within_twice_the_reach():
    snap, sections = world(), {}
    most = 0
    for n in range(3 * len(HOSTS)):
        got = ask(snap, sections, 10)
        write(snap, got[n % 10], step=3)
        kept = {kind: [k for k in section if type(k) is int and k >= 0]
                for kind, section in sections.items() if kind[0].startswith("candidate-round")}
        most = max(most, *map(len, kept.values()))
    # Answers reach 10 hosts: without trimming every host would be kept.
    assert 10 <= most <= 2 * 10 + 8
    assert sections[("candidate-round-trees", "hosts")][-2] == 10


def test_rank_and_offset():
    snap = world(10)
    assert [rotation.rank(snap, r) for r in snap.roots] == list(range(10))
    every = list(snap.roots)
    assert rotation.offset(snap, every, 3) == 3
    # A subset begins at its first root at or after the start's.
    odd = every[1::2]
    assert rotation.offset(snap, odd, 4) == 2
    assert rotation.offset(snap, odd, 9) == 4
    # Past its last root: from its first.
    assert rotation.offset(snap, every[:5], 7) == 0
    assert rotation.offset(snap, [], 3) == 0
