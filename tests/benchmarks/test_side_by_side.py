"""The side-by-side benchmark: its worlds, its report, and one tiny run."""

from __future__ import annotations

import math

import pytest

from benchmarks.side_by_side import __main__ as bench
from benchmarks.side_by_side import measure, report, worlds
from benchmarks.side_by_side.measure import Timing


@pytest.mark.parametrize("shape,per_host", [("flat", 1), ("numa", 9), ("wide", 9)])
def test_worlds_have_their_shape(shape, per_host):
    world = worlds.SHAPES[shape](30)
    assert world.providers == 30 * per_host
    uuids = [p.uuid for tree in world.trees for p in tree]
    assert len(set(uuids)) == len(uuids)
    for tree in world.trees:
        seen = set()
        for p in tree:  # parents come before their children
            assert p.parent is None or p.parent in seen
            seen.add(p.name)
    assert world.root(0) == world.trees[0][0].uuid


def test_sharing_world_has_one_pool_per_fifty_hosts():
    world = worlds.sharing(200)
    pools = [t[0] for t in world.trees if "MISC_SHARES_VIA_AGGREGATE" in t[0].traits]
    assert len(pools) == 4
    assert world.providers == 204


def test_the_unlimited_four_group_query_is_left_out_of_big_wide_worlds():
    small = [q.label for q in worlds.wide(50).queries]
    big = [q.label for q in worlds.wide(1000).queries]
    assert "wide: 4 isolated device groups" in small
    assert "wide: 4 isolated device groups" not in big
    assert len(big) == len(small) - 1


def _timing(*ms: float, timed_out: bool = False) -> Timing:
    return Timing([m / 1000 for m in ms], timed_out=timed_out)


def test_ratio_is_upstream_median_over_allotment_median():
    assert report.ratio({"upstream": _timing(10, 30, 20),
                         "allotment": _timing(1, 2, 3)}) == pytest.approx(10)
    assert math.isinf(report.ratio({"upstream": _timing(timed_out=True),
                                    "allotment": _timing(5)}))
    assert report.ratio({"upstream": _timing(5), "allotment": _timing()}) is None


def test_report_summarises_candidates_but_not_listings():
    out = report.Report("scripts/benchmark --quick")
    section = out.section("sqlite, flat, 2 hosts")
    section.reads["flat: q"] = {"upstream": _timing(40), "allotment": _timing(2)}
    section.reads["flat: r"] = {"upstream": _timing(90), "allotment": _timing(10)}
    section.reads["GET /resource_providers"] = {"upstream": _timing(5),
                                               "allotment": _timing(5)}
    text = out.render()
    # Geometric mean of 20x and 9x; the listing (1x) is not a candidates query.
    assert "geometric mean speed-up 13.4x, lowest 9.0x over 2 scenarios" in text
    assert "| flat: q |  | 40.0 | 2.0 | 20.0x |" in text


class _Fixed:
    """A service answering every read in a fixed number of seconds."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.asked = seconds, 0

    def request(self, method: str, path: str):
        self.asked += 1
        return 200, b'{"resource_providers": []}', self.seconds


def test_fast_scenarios_are_sampled_past_repeat_until_the_fill_time():
    fast = {"upstream": _Fixed(0.004), "allotment": _Fixed(0.001)}
    got = measure.alternate(fast, "/", repeat=11, budget=30.0, fill=0.1)
    # 20 rounds of 5 ms reach the 0.1 s fill; both services alike.
    assert [len(t.samples) for t in got.values()] == [20, 20]
    got = measure.alternate(fast, "/", repeat=11, budget=30.0, fill=10.0, most=50)
    assert [len(t.samples) for t in got.values()] == [50, 50]
    slow = {"upstream": _Fixed(0.5), "allotment": _Fixed(0.01)}
    got = measure.alternate(slow, "/", repeat=11, budget=30.0, fill=2.0)
    assert [len(t.samples) for t in got.values()] == [11, 11]
    # Without a fill time, exactly repeat rounds, as before.
    got = measure.alternate(fast, "/", repeat=7, budget=30.0)
    assert [len(t.samples) for t in got.values()] == [7, 7]


@pytest.mark.slow
def test_a_tiny_run_measures_both_services(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert bench.main(["--quick", "--backends", "sqlite", "--shapes", "flat",
                       "--output", str(out)]) == 0
    text = out.read_text()
    assert "### sqlite, flat, 20 hosts (20 providers)" in text
    assert "claims, upstream:" in text and "claims, allotment:" in text
    assert "over-allocated inventories: 0" in text
    assert "REST load" in text


def test_the_client_sends_one_request_and_reads_the_answer_to_the_end():
    import socket
    import threading

    from benchmarks.side_by_side.client import Client

    received = []
    body = b'{"resource_providers": []}'

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data or not data.endswith(b"}"):
                    data += conn.recv(65536)
                received.append(data)
                conn.sendall(b"HTTP/1.1 409 Conflict\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(body))
                conn.sendall(body)

        thread = threading.Thread(target=serve)
        thread.start()
        port = listener.getsockname()[1]
        status, payload, seconds = Client(f"http://127.0.0.1:{port}").request(
            "PUT", "/traits/CUSTOM_A", {"a": 1})
        thread.join()
    assert (status, payload) == (409, body) and seconds > 0
    head, _, sent_body = received[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "PUT /traits/CUSTOM_A HTTP/1.1"
    assert "OpenStack-API-Version: placement 1.39" in lines
    assert f"Content-Length: {len(sent_body)}" in lines and sent_body == b'{"a": 1}'
