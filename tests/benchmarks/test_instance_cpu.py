"""The instance-CPU benchmark runs a scheduler's requests in process and
prints the CPU of each."""

from __future__ import annotations

from benchmarks import instance_cpu
from tests.benchmarks.printed import kinds_with_medians


def test_a_tiny_run_prints_each_request(capsys):
    assert instance_cpu.main(["--hosts", "3", "--instances", "6", "--held", "2",
                              "--warm-up", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sqlite, 3 flat hosts, 6 instances")
    assert kinds_with_medians(lines[1:]) == ["GET candidates", "GET consumer", "PUT", "DELETE"]
