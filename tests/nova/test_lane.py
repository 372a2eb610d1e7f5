"""nova 34.0.0's functional tests pass with allotment's Placement fixture.

The suite runs the lane's short subset (``tests/nova/lane.py``, SUBSET) on
allotment's fixture, under eventlet and with native threads.  A test that
fails is run once more (nova waits for servers with fixed timeouts, which a
busy machine can miss), then on upstream's fixture, and counts only if it
passes there (a failure of nova's own, or of a dependency release, fails on
both).
``scripts/nova-functional`` runs every placement-heavy file on both fixtures.
"""

from __future__ import annotations

import pytest

from tests.nova import lane

# One nova run at a time: it keeps two processes of its own busy.
pytestmark = [pytest.mark.xdist_group("nova"), pytest.mark.slow]


@pytest.mark.parametrize("mode", lane.MODES)
def test_nova_functional_subset(mode, capsys):
    status = lane.main(["--subset", "--mode", mode])
    report = capsys.readouterr().out
    assert status == 0, report
    for f in lane.SUBSET[mode]:
        assert f"| {f} |" in report
