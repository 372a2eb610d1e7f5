"""The mix's other callers against a real allotment server: moves (resize or
migration, confirmed or reverted) and every host's periodic report.  The
books must hold after them: every instance held where its last move left
it, no migration consumer left over, and the reports' inventory writes
counted with the 409s that claims cause them."""

from __future__ import annotations

import pytest

from benchmarks.side_by_side import flavors, mix, reporting, verify
from benchmarks.side_by_side.client import Client, load
from benchmarks.side_by_side.mix_run import _client_factory
from tests.harness.servers import start_allotment

HOSTS = 6


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mix-callers")
    url = f"sqlite:///{workdir / 'placement.sqlite'}"
    world = flavors.world("flat", HOSTS)
    with start_allotment(url, workdir / "server", workers=2) as server:
        load(server.url, world, threads=1)
        # One set of books over the module's tests: they share the server.
        yield server, world, mix.Ledger()


def _books(server, ledger: mix.Ledger) -> verify.Verdict:
    usages = _client_factory(server.url, 60)("1.9").call(
        "GET", f"/usages?project_id={mix.PROJECT}")["usages"]
    books = verify.read(server.database_url, mix.PROJECT, usages)
    return verify.check(books, ledger.granted, ledger.deleted)


def test_moves_end_confirmed_or_reverted_and_the_books_follow_them(served):
    server, _, ledger = served
    menu = flavors.FLAVORS["flat"][:4]
    make = _client_factory(server.url, 60)
    mix.run(make, menu, 20, ledger, threads=2, seed=1, processes=True)
    assert ledger.scheduled >= 15 and not ledger.errors
    # Half of the schedulings move an instance of the first round.
    mix.run(make, menu, 30, ledger, threads=2, seed=2, processes=True, move_share=0.5)
    assert not ledger.errors, ledger.errors
    assert ledger.confirmed > 0 and ledger.reverted > 0
    # Every move: two reads and a hand-over, a claim, then two more requests.
    assert len(ledger.move_requests) >= 6 * (ledger.confirmed + ledger.reverted)
    verdict = _books(server, ledger)
    assert verdict.ok, verdict.summary()
    # Each instance is held where the books say its last move left it.
    client = Client(server.url)
    for consumer in set(ledger.granted) - ledger.deleted:
        held = client.call("GET", f"/allocations/{consumer}")["allocations"]
        assert {rp: a["resources"] for rp, a in held.items()} == {
            rp: a["resources"] for rp, a in ledger.granted[consumer].items()}


def test_the_hosts_reports_read_and_write_as_nova_does(served):
    server, world, ledger = served
    roots = [tree[0].uuid for tree in world.trees]
    make = _client_factory(server.url, 60)
    # Every host-period changes the disk: fast enough that claims land between
    # the reports' reads and writes.
    reports = reporting.Reporting(roots, period=1.0, scale=2.0, change_share=1.0,
                                  processes=2)
    mix.run(make, flavors.FLAVORS["flat"][:4], 30, ledger, threads=2, seed=3,
            processes=True, reporting=reports)
    st = reports.stats
    assert not st.errors, st.errors
    assert st.host_periods > 0 and st.seconds > 0
    assert st.writes + st.failed_writes > 0
    # A refresh is in_tree, then inventories, aggregates and traits per provider.
    assert st.refreshes > 0
    assert len(st.requests) >= st.host_periods + 4 * st.refreshes + st.writes
    # The disks changed by one, and nothing else.
    for root in roots:
        disk = Client(server.url).call(
            "GET", f"/resource_providers/{root}/inventories")["inventories"]["DISK_GB"]
        assert disk["total"] in (2000, 2001)
    verdict = _books(server, ledger)
    assert verdict.ok, verdict.summary()


def test_reports_due_follow_the_scaled_rate():
    reports = reporting.Reporting(["a"] * 600, period=60.0, scale=0.5)
    assert reports.rate == pytest.approx(5.0)


def test_the_report_gives_each_caller_its_row_and_the_reports_their_own_cost():
    from benchmarks.side_by_side.mix_report import MixSection

    section = MixSection("t", report_rate=2.0, moves=0.1)
    led = section.ledgers["allotment"] = mix.Ledger(seconds=10.0)
    led.gets, led.puts, led.move_requests = [0.01] * 30, [0.02] * 20, [0.005] * 40
    led.confirmed, led.reverted, led.move_conflicts = 3, 2, 1
    reports = section.reports["allotment"] = reporting.Reporting(["a", "b"], period=1.0)
    reports.stats.add({"requests": [0.003] * 50, "host_periods": 20, "due": 25.0,
                       "conflicts": 2, "writes": 1, "refreshes": 4})
    reports.stats.seconds = 10.0
    alone = section.alone["allotment"] = reporting.Stats(
        requests=[0.002] * 30, host_periods=10, due=10.0, seconds=5.0, api_cpu=0.05)
    text = "\n".join(section.render())
    assert "| allotment | scheduling | 5.0 |" in text  # 50 requests in 10 s
    assert "| allotment | moves | 4.0 |" in text and "3 confirmed, 2 reverted" in text
    assert "| allotment | hosts' reports | 5.0 |" in text
    assert "20 of 25 host-periods due (80%)" in text
    assert "API CPU 5.0 ms" in text and alone.db_cpu is None and "DB CPU — ms" in text
    # No rounds: no caller rows.
    led.seconds = 0.0
    assert "| allotment | scheduling |" not in "\n".join(section.render())
