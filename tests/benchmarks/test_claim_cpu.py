"""The claim-CPU benchmark runs nova's writes in process and prints their CPU."""

from __future__ import annotations

import pytest

from benchmarks import claim_cpu
from tests.benchmarks.printed import kinds_with_medians


@pytest.mark.parametrize("level", ["request", "service"])
def test_a_tiny_run_prints_each_operation(level, capsys):
    assert claim_cpu.main(["--hosts", "3", "--rounds", "4", "--warm-up", "2",
                           "--level", level]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"sqlite, 3 hosts, 4 rounds, {level} level")
    assert kinds_with_medians(lines[1:]) == ["PUT", "POST move", "POST confirm", "DELETE"]
