"""A world made again next to each other (World.compact, what allotment-api's
main process does before forking its workers) holds exactly what it held,
shares what it shared, still changes as a world that was never compacted,
and leaves the process holding fewer arenas of Python's allocator."""

from __future__ import annotations

import datetime
import subprocess
import sys
import textwrap
from pathlib import Path

from allotment.storage.loader import LoadedProvider
from allotment.world.model import Names, World
from tests.harness.positions import indexes_share_positions

NAMES = Names({0: "VCPU", 1: "MEMORY_MB", 2: "DISK_GB"},
              {"HW_CPU_X86_AVX2": 1, "MISC_SHARES_VIA_AGGREGATE": 2})
NUMA = {"VCPU": (8, 0, 1, 8, 1, 4.0), "MEMORY_MB": (4096, 512, 1, 4096, 1, 1.0)}
WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5)


def _loaded(hosts: int) -> dict[int, LoadedProvider]:
    loaded: dict[int, LoadedProvider] = {}
    pid = 1000
    for h in range(hosts):
        root, root_uuid = pid, f"{h:06d}-host"
        loaded[pid] = LoadedProvider(
            root_uuid, f"host-{h}", 3, None, None, root, WHEN, None,
            {"DISK_GB": (100 + h % 3, 0, 1, 100, 1, 1.0)},
            frozenset({"HW_CPU_X86_AVX2"}) if h % 2 else frozenset(),
            frozenset({f"agg-{h % 4}"}))
        pid += 1
        for n in range(2):
            loaded[pid] = LoadedProvider(
                f"{h:06d}-numa{n}", f"host-{h}-numa{n}", 1, root_uuid, root_uuid, root,
                WHEN, WHEN + datetime.timedelta(seconds=h), dict(NUMA),
                frozenset(), frozenset())
            pid += 1
    loaded[pid] = LoadedProvider("zz-shared", "shared-disk", 1, None, None, pid, WHEN, None,
                                 {"DISK_GB": (5000, 0, 1, 5000, 1, 1.0)},
                                 frozenset({"MISC_SHARES_VIA_AGGREGATE"}),
                                 frozenset({"agg-1"}))
    return loaded


def _usage(hosts: int) -> list[tuple[int, int, int]]:
    return [(1000 + 3 * h + 1, 0, 2) for h in range(0, hosts, 3)]


def _held(world: World) -> dict:
    snap = world.snapshot
    positions = snap.live_positions()
    return {
        "providers": snap.providers,
        "positions": positions,
        "trees": {snap.uuids[r]: [snap.uuids[m] for m in snap.tree_members(r)]
                  for r in snap.roots},
        "by_rc": {rc: sorted(m) for rc, m in snap.by_rc.items()},
        "agg_members": {a: sorted(m) for a, m in snap.agg_members.items()},
        "sharing": dict(snap.sharing_by_anchor),
        "revisions": [snap.revision(snap.uuids[i]) for i in positions],
        "used": snap.used,
        "stamps": dict(world.stamps),
        "uuid_of_id": dict(world.uuid_of_id),
        "by_name": dict(world.by_name),
    }


def test_a_compacted_world_holds_what_it_held():
    world = World(_loaded(60), _usage(60), NAMES)
    before = _held(world)
    old_uuids, old_stamps = world.snapshot.uuids, world.stamps
    world.compact()
    assert world.snapshot.uuids is not old_uuids and world.stamps is not old_stamps
    assert _held(world) == before


def test_a_compacted_world_shares_what_it_shared():
    world = World(_loaded(60), _usage(60), NAMES)
    world.compact()
    snap = world.snapshot
    assert indexes_share_positions(snap)
    numa = [snap.index[f"{h:06d}-numa{n}"] for h in range(60) for n in range(2)]
    assert all(snap.inventory[i] is snap.inventory[numa[0]] for i in numa)
    assert snap.uuids[numa[0]] is next(u for u in snap.index if u == snap.uuids[numa[0]])
    assert world.stamps["000001-numa0"].root_id is world.stamps["000001-host"].id
    assert all(world.uuid_of_id[s.id] is uuid for uuid, s in world.stamps.items())


def test_a_compacted_world_changes_as_one_never_compacted():
    compacted, plain = World(_loaded(30), _usage(30), NAMES), World(_loaded(30), _usage(30), NAMES)
    compacted.compact()
    grown = _loaded(31)
    new_host = {pid: p for pid, p in grown.items() if p.uuid.startswith("000030")}
    moved = {pid: p._replace(inventories={"VCPU": (16, 0, 1, 16, 1, 2.0)})
             for pid, p in _loaded(30).items() if p.uuid.startswith("000004")}
    for world in (compacted, plain):
        world.replace_trees([], new_host)
        world.replace_trees([next(iter(moved))], moved)
        world.add_usage([(1000 + 3 * 4 + 1, 0, 3), (1000 + 3 * 7 + 2, 1, 1024)])
    held, expected = _held(compacted), _held(plain)
    # Revisions are numbers drawn for the whole process: equal in step only.
    assert held.pop("revisions") != expected.pop("revisions")
    assert held == expected


# A world read with short-lived objects made between the kept ones, as rows
# are, then compacted; prints the allocator's arenas before and after.
_ARENAS = textwrap.dedent("""
    import gc, io, os, sys, tempfile
    sys.path[:0] = {path!r}
    from tests.world.test_compaction import NAMES, _loaded, _usage
    from allotment.world.model import World

    def arenas():
        with tempfile.TemporaryFile("w+") as out:
            saved = os.dup(2)
            os.dup2(out.fileno(), 2)
            try:
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
            out.seek(0)
            line = next(l for l in out if l.startswith("# arenas allocated current"))
        return int(line.split("=")[1].replace(",", ""))

    rows = []
    def scattered(loaded):
        for pid, p in loaded.items():
            rows.append([(pid, str(pid)) for _ in range(12)])
            yield pid, p._replace(uuid=(p.uuid + ".")[:-1], name=(p.name + ".")[:-1])
    world = World(dict(scattered(_loaded(4000))), _usage(4000), NAMES)
    del rows[:]
    gc.collect()
    before = arenas()
    world.compact()
    gc.collect()
    print(before, arenas())
""")


def test_compaction_gives_back_the_arenas_a_load_scattered_the_world_over():
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", _ARENAS.format(path=[root, *sys.path])],
                         check=True, capture_output=True, text=True).stdout
    before, after = map(int, out.split())
    assert after < before * 0.75, (before, after)


def test_a_world_lost_while_made_again_is_read_anew(db, monkeypatch):
    from allotment.service import resource_providers as provider_service
    from allotment.world import compaction
    from allotment.world.sync import Replica

    provider_service.create_provider(db, name="host", parent_uuid=None)
    replica = Replica(db)
    replica.catch_up()
    world = replica.world

    def refuse(parts):
        raise TypeError("cannot pickle")

    # Refused before anything was let go: the world stays as it was.
    monkeypatch.setattr(compaction, "remade", refuse)
    replica.compact()
    assert replica.world is world and world.by_name.keys() == {"host"}
    assert len(world.snapshot) == 1 and len(world.stamps) == 1

    def lose(parts):
        parts.clear()
        raise MemoryError

    # Failed once the originals were gone: not served, read anew.
    monkeypatch.setattr(compaction, "remade", lose)
    replica.compact()
    assert replica.world is None
    with replica.current() as again:
        assert again.by_name.keys() == {"host"} and replica.rebuilds == 2
