"""The instance-CPU benchmark runs a scheduler's requests in process and
prints the CPU of each."""

from __future__ import annotations

import re

from benchmarks import instance_cpu


def test_a_tiny_run_prints_each_request(capsys):
    assert instance_cpu.main(["--hosts", "3", "--instances", "6", "--held", "2",
                              "--warm-up", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sqlite, 3 flat hosts, 6 instances")
    kinds = []
    for line in lines[1:]:
        m = re.fullmatch(r"  (\S+(?: \S+)?) +(\d+) / +(\d+)", line)
        assert m, line
        kinds.append(m.group(1))
        assert int(m.group(2)) > 0 and int(m.group(3)) > 0
    assert kinds == ["GET candidates", "GET consumer", "PUT", "DELETE"]
