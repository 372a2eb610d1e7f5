"""world.preemptible.brought_up: what is kept of the preemptible
consumers, moved through changes of the world, is what reading them all
afresh gives, and the database is asked again only about the providers
that changed."""

from __future__ import annotations

import random

from allotment.engine import whatif
from allotment.engine.live import LiveSnapshot
from allotment.engine.records import Inventory, ProviderRecord
from allotment.engine.whatif import Holding
from allotment.world.preemptible import brought_up

HOSTS = [f"00000000-0000-0000-0000-{n:012d}" for n in range(6)]


class Database:
    """Consumers and what they hold, read as the service reads them."""

    key = ("preemptible", ("SPOT",))

    def __init__(self) -> None:
        self.held: dict[str, dict[str, dict[str, int]]] = {}
        self.asked: list[list[str] | None] = []

    def __call__(self, providers):
        self.asked.append(None if providers is None else sorted(providers))
        return [Holding(c, {p: dict(r) for p, r in allocs.items()})
                for c, allocs in self.held.items()
                if providers is None or any(p in providers for p in allocs)]


def world() -> LiveSnapshot:
    return LiveSnapshot.build([ProviderRecord(uuid=h, inventories={"VCPU": Inventory(64)})
                               for h in HOSTS])


def write(snap: LiveSnapshot, db: Database, consumer: str,
          allocs: dict[str, dict[str, int]]) -> None:
    """A consumer's allocations replaced, as the change feed brings them."""
    before = db.held.pop(consumer, {})
    deltas = [(p, rc, -n) for p, r in before.items() for rc, n in r.items()]
    deltas += [(p, rc, n) for p, r in allocs.items() for rc, n in r.items()]
    if allocs:
        db.held[consumer] = allocs
    snap.add_usage(deltas)


def as_read(kept: whatif.Preemptible) -> dict:
    return {h.consumer: h.allocations for h in kept.holdings}


def test_kept_moves_with_the_world():
    rng = random.Random(7)
    snap, db, section = world(), Database(), {}
    for _ in range(40):
        consumer = f"c{rng.randrange(12)}"
        hosts = rng.sample(HOSTS, rng.randint(0, 2))
        write(snap, db, consumer, {h: {"VCPU": rng.randint(1, 4)} for h in hosts})
        kept = brought_up(snap, section, db.key, db)
        assert as_read(kept) == as_read(whatif.preemptible_given(snap, db(None)))
        assert {p: sorted(h.consumer for h in hs) for p, hs in kept.on_provider.items()} == {
            p: sorted(c for c, a in db.held.items() if p in a) for p in
            {p for a in db.held.values() for p in a}}
        wide = kept.wide()
        for h in HOSTS:
            assert h not in wide.used or not wide.used[h].get("VCPU")


def test_only_changed_providers_are_read_again():
    snap, db, section = world(), Database(), {}
    write(snap, db, "a", {HOSTS[0]: {"VCPU": 2}, HOSTS[1]: {"VCPU": 1}})
    write(snap, db, "b", {HOSTS[2]: {"VCPU": 3}})
    first = brought_up(snap, section, db.key, db)
    assert db.asked == [None]
    # Nothing changed: the same, nothing asked.
    assert brought_up(snap, section, db.key, db) is first
    assert db.asked == [None]
    # b moves to host 3: hosts 2 and 3 are asked about, a is kept as it was.
    write(snap, db, "b", {HOSTS[3]: {"VCPU": 3}})
    second = brought_up(snap, section, db.key, db)
    assert db.asked[1:] == [sorted(HOSTS[2:4])]
    assert second.by_consumer["a"] is first.by_consumer["a"]
    assert second.by_consumer["b"].allocations == {HOSTS[3]: {"VCPU": 3}}
    # Another world (read again from scratch): everything is read again.
    other = world()
    brought_up(other, section, db.key, db)
    assert db.asked[-1] is None
