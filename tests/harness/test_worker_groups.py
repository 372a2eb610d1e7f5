"""The suite runs on two workers (``pytest -n 2 --dist loadgroup``), and
lanes that share one resource -- the Galera cluster whose nodes a test
kills, the nova venv, one upstream server per backend -- rely on every test
of a group running on the same worker, one after another.  pytest 9.2 no
longer sees the group pytest-xdist 3.8 gives a test, and then those tests
were spread over both workers without a word: one worker's node kill broke
the other's Galera tests.  This runs a small grouped module the way
scripts/test runs the suite and checks that the group stayed whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GROUPED = '''
import os
from pathlib import Path
import pytest

pytestmark = pytest.mark.xdist_group("one")

@pytest.mark.parametrize("n", range(8))
def test_in_the_group(n):
    with open(Path(__file__).with_name("workers"), "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
'''


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", "-q", str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    workers = (tmp_path / "workers").read_text().split()
    assert len(workers) == 8
    assert len(set(workers)) == 1, workers
