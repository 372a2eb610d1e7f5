"""allotment on a 3-node Galera cluster, with writes through two nodes.

Server A reads and writes through node 1, server B through node 2 (see
conftest.py).  Whatever node a process reads through, it must answer with
every change committed anywhere -- a transaction committed late on another
node included -- and invariants guarded by locks must hold when two nodes
commit at once, where a lock taken on one node means nothing to the other.
Conflicts that only a cluster has (certification failures) must never reach
clients: they get the answers one server gives.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import sqlalchemy as sa

from allotment.service import resource_providers as provider_service
from allotment.storage import db as db_mod
from allotment.storage import feed, tables
from allotment.storage import resource_providers as rp_store
from tests.harness.workload import Workload, audit, candidates_agree

# One cluster, one worker: the tests take nodes away, so two of them at once
# (one killing node 2 while the other writes through it) would break each
# other.  tests/harness/test_worker_groups.py checks that groups hold.
pytestmark = [pytest.mark.xdist_group("galera"), pytest.mark.slow]

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.37"}
# A late commit comes this long (seconds) after its feed id was taken: past
# every patience a reader could have for an id it skipped.
LATE = 3.0
RACE_ROUNDS = 24


def _get(url: str, path: str) -> requests.Response:
    return requests.get(url + path, headers=HEADERS, timeout=30)


def _create(url: str, name: str, parent: str | None = None) -> str:
    body = {"name": name, "uuid": str(uuid.uuid4())}
    if parent:
        body["parent_provider_uuid"] = parent
    resp = requests.post(f"{url}/resource_providers", headers=HEADERS, json=body, timeout=30)
    assert resp.status_code == 200, resp.text
    return body["uuid"]


def _tables(galera) -> dict[str, tuple]:
    """uuid -> (name, generation, parent uuid, VCPU used), as the tables say."""
    engine = sa.create_engine(db_mod.normalise_url(galera.url(1)))
    rp, parent, a = tables.resource_providers, tables.resource_providers.alias(), \
        tables.allocations
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SET SESSION wsrep_sync_wait = 7"))
            used = dict(conn.execute(
                sa.select(a.c.resource_provider_id, sa.func.sum(a.c.used))
                .group_by(a.c.resource_provider_id)).all())
            return {row.uuid: (row.name, row.generation, row.parent, used.get(row.id, 0))
                    for row in conn.execute(
                        sa.select(rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation,
                                  parent.c.uuid.label("parent"))
                        .select_from(rp.outerjoin(parent,
                                                  parent.c.id == rp.c.parent_provider_id)))}
    finally:
        engine.dispose()


def _answers(url: str, uuids) -> dict[str, tuple]:
    out = {}
    for u in uuids:
        rp = _get(url, f"/resource_providers/{u}")
        assert rp.status_code == 200, rp.text
        usages = _get(url, f"/resource_providers/{u}/usages")
        assert usages.status_code == 200, usages.text
        body = rp.json()
        out[u] = (body["name"], body["generation"], body["parent_provider_uuid"],
                  sum(usages.json()["usages"].values()))
    return out


def _both_servers_answer_as_the_tables(galera, tries: int = 4) -> None:
    """Every worker of both servers answers what the tables hold (each
    server is asked ``tries`` times, so as to reach each of its workers)."""
    expected = _tables(galera)
    for server in (galera.a, galera.b):
        for _ in range(tries):
            listed = _get(server.url, "/resource_providers")
            assert listed.status_code == 200, listed.text
            assert {p["uuid"] for p in listed.json()["resource_providers"]} == set(expected)
            assert _answers(server.url, expected) == expected, server.url


# -- a transaction committing late on another node ----------------------------

def _late_writer(galera, provider: str):
    """On node 2, the write allotment makes to rename ``provider``, up to and
    including its change-feed row -- not yet committed."""
    database = db_mod.Database(db_mod.create_engine(galera.url(2)))
    conn = database.engine.connect()
    tx = conn.begin()
    feed.begin(conn)
    row = rp_store.lock_by_uuid(conn, provider)
    rp_store.rename(conn, row.id, "renamed-late")
    rp_store.bump(conn, row.id, row.generation)
    taken = feed.flush(conn, feed.end(conn))
    return database, conn, tx, taken


def test_a_late_commit_on_another_node_is_applied_everywhere(galera):
    provider = _create(galera.a.url, "late")
    _both_servers_answer_as_the_tables(galera)
    database, conn, tx, taken = _late_writer(galera, provider)
    try:
        assert taken
        deadline = time.monotonic() + LATE
        while time.monotonic() < deadline:
            for server in (galera.a, galera.b):
                assert _get(server.url, f"/resource_providers/{provider}").json()[
                    "name"] == "late"
            time.sleep(0.2)
        tx.commit()
    finally:
        conn.close()
        database.dispose()
    for server in (galera.a, galera.b):
        for _ in range(4):
            body = _get(server.url, f"/resource_providers/{provider}").json()
            assert (body["name"], body["generation"]) == ("renamed-late", 1), server.url
    _both_servers_answer_as_the_tables(galera)


def test_a_late_commit_behind_a_later_write_elsewhere_is_never_lost(galera):
    """The probe of the lost change: a write through node 1 commits (and is
    read) while a transaction on node 2 still holds an earlier feed id; the
    late one then commits or is refused, and either way every process
    answers what the tables hold."""
    provider = _create(galera.a.url, "behind")
    database, conn, tx, _ = _late_writer(galera, provider)
    committed = False
    try:
        other = _create(galera.a.url, "written-meanwhile")
        deadline = time.monotonic() + LATE
        while time.monotonic() < deadline:
            for server in (galera.a, galera.b):
                assert _get(server.url, f"/resource_providers/{other}").status_code == 200
            time.sleep(0.2)
        try:
            tx.commit()
            committed = True
        except sa.exc.DBAPIError as exc:
            # Certification let the write through node 1 win: the late one
            # took the same feed id, and is aborted as a conflict.
            assert exc.orig.args[0] in (1213, 1180), exc
    finally:
        conn.close()
        database.dispose()
    name = "renamed-late" if committed else "behind"
    for server in (galera.a, galera.b):
        for _ in range(4):
            assert _get(server.url, f"/resource_providers/{provider}").json()[
                "name"] == name, server.url
    _both_servers_answer_as_the_tables(galera)


def test_a_write_acknowledged_through_one_node_is_seen_by_the_next_through_another(galera):
    """Read-your-writes across nodes, for writes too: a child created through
    one node right after its parent was created through the other finds the
    parent (its transaction begins with a write, not a read)."""
    for round_ in range(40):
        first, second = (galera.a, galera.b) if round_ % 2 else (galera.b, galera.a)
        parent = _create(first.url, f"ryw-parent-{round_}")
        _create(second.url, f"ryw-child-{round_}", parent=parent)


# -- re-parenting through two nodes at once -----------------------------------

def _has_cycle(galera) -> bool:
    parent_of = {u: p for u, (_, _, p, _) in _tables(galera).items()}
    for start in parent_of:
        seen, node = set(), start
        while node is not None:
            if node in seen:
                return True
            seen.add(node)
            node = parent_of.get(node)
    return False


def test_two_reparentings_through_two_nodes_never_make_a_cycle(galera):
    """A puts P2 under P1 while B puts P1 under P2: one may win, never both;
    the other hears what one server would say (400), never a 5xx."""
    outcomes = []
    sessions = [requests.Session(), requests.Session()]
    for round_ in range(RACE_ROUNDS):
        p1 = _create(galera.a.url, f"p1-{round_}")
        p2 = _create(galera.b.url, f"p2-{round_}")
        child = _create(galera.a.url, f"c-{round_}", parent=p2)
        barrier = threading.Barrier(2)

        def move(i: int, url: str, mover: str, name: str, parent: str,
                 barrier: threading.Barrier = barrier) -> int:
            barrier.wait()
            return sessions[i].put(f"{url}/resource_providers/{mover}", headers=HEADERS,
                                   json={"name": name, "parent_provider_uuid": parent},
                                   timeout=60).status_code

        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(move, 0, galera.a.url, p2, f"p2-{round_}", p1)
            # P1 under the child of P2: a cycle of three if both were taken.
            second = pool.submit(move, 1, galera.b.url, p1, f"p1-{round_}", child)
            statuses = (first.result(), second.result())
        outcomes.append(statuses)
        assert all(s in (200, 400, 409) for s in statuses), statuses
        assert statuses.count(200) <= 1, f"round {round_}: both moves taken"
    print("re-parenting race outcomes:", sorted(Counter(outcomes).items()))
    assert not _has_cycle(galera)
    assert any(200 in o for o in outcomes)
    _both_servers_answer_as_the_tables(galera)
    for server in (galera.a, galera.b):
        resp = _get(server.url, "/allocation_candidates?resources=VCPU:1")
        assert resp.status_code == 200, resp.text


def test_a_move_checked_before_another_nodes_move_committed_cannot_commit(galera):
    """The window a lock on one node leaves open: B (node 2) has checked that
    P1 may go under P2 when A's move of P2 under P1 commits on node 1 and is
    applied on node 2.  B must not commit after that (the guard row is in
    both write sets); run again, it finds the loop and is refused."""
    p1 = _create(galera.a.url, "guard-p1")
    p2 = _create(galera.a.url, "guard-p2")
    node1 = db_mod.Database(db_mod.create_engine(galera.url(1)))
    node2 = db_mod.Database(db_mod.create_engine(galera.url(2)))
    conn = node2.engine.connect()
    try:
        tx = conn.begin()
        feed.begin(conn)
        rp_store.lock_tree_shapes(conn)
        mover, parent = rp_store.get_by_uuid(conn, p1), rp_store.get_by_uuid(conn, p2)
        assert parent.id not in rp_store.subtree_ids(conn, mover)  # no loop, as B sees it
        provider_service.update_provider(node1, p2, name="guard-p2", parent_uuid=p1,
                                         allow_reparenting=True)
        time.sleep(1.0)  # applied on node 2 by now
        with pytest.raises(sa.exc.DBAPIError) as failed:
            rp_store.lock_rows(conn, [mover.id, parent.id])
            rp_store.set_parent(conn, mover, rp_store.get_by_id(conn, parent.id))
            feed.flush(conn, feed.end(conn))
            tx.commit()
        assert failed.value.orig.args[0] in (1213, 1180), failed.value
    finally:
        conn.close()
        node1.dispose()
        node2.dispose()
    assert not _has_cycle(galera)
    resp = requests.put(f"{galera.b.url}/resource_providers/{p1}", headers=HEADERS,
                        json={"name": "guard-p1", "parent_provider_uuid": p2}, timeout=30)
    assert resp.status_code == 400, resp.text
    assert "loop" in resp.json()["errors"][0]["detail"]
    _both_servers_answer_as_the_tables(galera)


# -- the first claims of a new project, through two nodes ----------------------

def test_first_claims_of_a_new_project_through_two_nodes_all_succeed(galera):
    provider = _create(galera.a.url, "first-claims")
    resp = requests.put(f"{galera.a.url}/resource_providers/{provider}/inventories",
                        headers=HEADERS, timeout=30,
                        json={"resource_provider_generation": 0,
                              "inventories": {"VCPU": {"total": 100}}})
    assert resp.status_code == 200, resp.text
    project, user = str(uuid.uuid4()), str(uuid.uuid4())
    barrier = threading.Barrier(30)

    def claim(i: int) -> int:
        url = (galera.a, galera.b)[i % 2].url
        barrier.wait()
        return requests.put(f"{url}/allocations/{uuid.uuid4()}", headers=HEADERS, timeout=60,
                            json={"allocations": {provider: {"resources": {"VCPU": 1}}},
                                  "project_id": project, "user_id": user,
                                  "consumer_generation": None}).status_code

    with ThreadPoolExecutor(30) as pool:
        statuses = list(pool.map(claim, range(30)))
    assert statuses == [204] * 30, statuses
    _both_servers_answer_as_the_tables(galera)


# -- random writes through two nodes, then a node lost and back ---------------

CLIENTS = 8


def _aborts(galera) -> int:
    """Certification failures and transactions aborted by applied write
    sets, on nodes 1 and 2 so far."""
    total = 0
    for node in (1, 2):
        engine = sa.create_engine(db_mod.normalise_url(galera.url(node)))
        try:
            with engine.connect() as conn:
                total += sum(int(v) for _, v in conn.execute(sa.text(
                    "SHOW GLOBAL STATUS WHERE Variable_name IN "
                    "('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')")))
        finally:
            engine.dispose()
    return total


def test_random_writes_through_two_nodes(galera):
    workload = Workload([galera.a.url, galera.b.url], providers=4, vcpus=30, seed=11)
    aborts = _aborts(galera)
    workload.run(CLIENTS, seconds=20)
    print("aborted by the cluster and run again:", _aborts(galera) - aborts)
    result = audit(workload, galera.url(1))
    statuses = result["statuses"]
    print("writes through two nodes:", result["claims"], "claims,",
          result["claims_ok"], "granted, statuses", sorted(statuses.items(), key=str))
    assert not [s for s in statuses if isinstance(s, int) and s >= 500], (
        statuses, workload.record.unavailable)
    assert result["claims_ok"] > 0
    for server in (galera.a, galera.b):
        candidates_agree(server.url, workload, result["usage"])
    _both_servers_answer_as_the_tables(galera)


def test_a_node_killed_and_back_rejoins_by_ist_and_serves_at_once(galera):
    cluster = galera.cluster
    workload = Workload([galera.a.url, galera.b.url], providers=4, vcpus=30, seed=12)
    served_again: list[float] = []
    ist_before = cluster.log(2).count("IST received")

    def kill_and_return():
        time.sleep(3)
        cluster.kill(2)
        time.sleep(5)
        cluster.start(2)  # back once Synced
        back = time.monotonic()
        # Server B, never restarted, answers through node 2 again at once.
        for i in range(6):
            resp = _get(galera.b.url, "/allocation_candidates?resources=VCPU:1&limit=3")
            assert resp.status_code == 200, (i, resp.status_code, resp.text)
        served_again.append(time.monotonic() - back)

    workload.run(CLIENTS, seconds=16, during=kill_and_return)
    # Node 2 caught up from the others' write-set cache, not by a full copy.
    assert cluster.log(2).count("IST received") > ist_before
    result = audit(workload, galera.url(1))
    statuses = result["statuses"]
    print("node 2 killed and back:", result["claims"], "claims,", result["claims_ok"],
          "granted, statuses", sorted(statuses.items(), key=str),
          f"server B served again {served_again[0]:.2f} s after node 2 was Synced; "
          f"503s from A (node 1): {workload.record.by_service[galera.a.url, 503]}, "
          f"from B (node 2): {workload.record.by_service[galera.b.url, 503]}")
    # Only 503s, and only while node 2 was away (audit refuses any other 5xx).
    assert not [s for s in statuses if isinstance(s, int) and s >= 500 and s != 503], statuses
    assert served_again and served_again[0] < 5
    for server in (galera.a, galera.b):
        candidates_agree(server.url, workload, result["usage"])
    _both_servers_answer_as_the_tables(galera)


@pytest.fixture(autouse=True)
def _cluster_whole(galera):
    """Every test starts and ends with all three nodes in the cluster."""
    yield
    lost = {}
    for node in galera.cluster.nodes:
        try:
            state = galera.cluster.state(node)
        except subprocess.CalledProcessError:
            state = "not answering"
        if state != "Synced":
            lost[node] = (state, galera.cluster.log(node)[-6000:])
            # Back for the tests that follow, whatever this one found.
            with contextlib.suppress(subprocess.CalledProcessError):
                galera.cluster.start(node)
    assert not lost, "\n".join(f"node {n}: {state}\n{log}" for n, (state, log) in lost.items())
