"""Upstream Placement 16.0.0 and allotment, started once for the lane."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.differential.compare import KNOWN
from tests.differential.lane import COUNTS
from tests.harness.servers import start_allotment, start_upstream


@pytest.fixture(scope="session")
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
          f"{COUNTS['requests']} requests compared, known upstream defects met: "
          f"{dict(KNOWN) or 'none'}")
