"""The write-CPU benchmark loads both services and splits the CPU time."""

from __future__ import annotations

import os
import re

from benchmarks import write_cpu


def test_a_tiny_run_prints_both_services(capsys):
    assert write_cpu.main(["--backend", "sqlite", "--hosts", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["allotment", "upstream"]
    for line in lines:
        m = re.search(r": (\d+) requests/s; CPU ms per request: service ([\d.]+), "
                      r"database server ([\d.]+), client ([\d.]+)$", line)
        assert m, line
        assert int(m.group(1)) > 0 and float(m.group(2)) > 0


def test_cpu_seconds_of_this_process_grow():
    before = write_cpu.cpu_seconds([os.getpid()])
    sum(i * i for i in range(2_000_000))
    assert write_cpu.cpu_seconds([os.getpid()]) > before
    assert write_cpu.cpu_seconds([2**22 + 12345]) == 0.0  # no such process
