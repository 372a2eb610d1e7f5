"""Random writes and reads, answered by upstream Placement 16.0.0 and by
allotment: no unexplained difference.

The default suite runs a bounded number of scenarios;
``scripts/differential`` runs many more (``DIFFERENTIAL_EXAMPLES``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.differential.lane import COUNTS, run_scenario
from tests.differential.ops import scenarios

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "20"))

# One pair of services for the whole lane, on one worker.
pytestmark = pytest.mark.xdist_group("differential")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_upstream_and_allotment_agree(services, scenario):
    difference, compared = run_scenario(scenario, *services)
    COUNTS["scenarios"] += 1
    COUNTS["requests"] += compared
    assert difference is None, str(difference)
