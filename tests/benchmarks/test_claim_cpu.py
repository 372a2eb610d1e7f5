"""The claim-CPU benchmark runs nova's writes in process and prints their CPU."""

from __future__ import annotations

import re

import pytest

from benchmarks import claim_cpu


@pytest.mark.parametrize("level", ["request", "service"])
def test_a_tiny_run_prints_each_operation(level, capsys):
    assert claim_cpu.main(["--hosts", "3", "--rounds", "4", "--warm-up", "2",
                           "--level", level]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"sqlite, 3 hosts, 4 rounds, {level} level")
    kinds = []
    for line in lines[1:]:
        m = re.fullmatch(r"  (\S+(?: \S+)?) +(\d+) / +(\d+)", line)
        assert m, line
        kinds.append(m.group(1))
        assert int(m.group(2)) > 0 and int(m.group(3)) > 0
    assert kinds == ["PUT", "POST move", "POST confirm", "DELETE"]
