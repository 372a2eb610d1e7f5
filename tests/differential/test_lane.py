"""Random writes and reads, answered by upstream Placement 16.0.0 and by
allotment: no unexplained difference.

The default suite runs a bounded number of scenarios;
``scripts/differential`` runs many more (``DIFFERENTIAL_EXAMPLES``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.differential.lane import run_scenario
from tests.differential.ops import scenarios
from tests.harness.servers import start_allotment, start_upstream

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "25"))
COUNTS = {"requests": 0, "scenarios": 0}


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    base: Path = tmp_path_factory.mktemp("differential")
    up = start_upstream(f"sqlite:///{base / 'upstream.sqlite'}", base / "upstream", workers=1)
    try:
        al = start_allotment(f"sqlite:///{base / 'allotment.sqlite'}", base / "allotment",
                             workers=1)
    except BaseException:
        up.stop()
        raise
    yield up.url, al.url
    al.stop()
    up.stop()
    print(f"\ndifferential lane: {COUNTS['scenarios']} scenarios, "
          f"{COUNTS['requests']} requests compared")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_upstream_and_allotment_agree(services, scenario):
    difference, compared = run_scenario(scenario, *services)
    COUNTS["scenarios"] += 1
    COUNTS["requests"] += compared
    assert difference is None, str(difference)
