"""The fixture distribution in nova_fixture/ is importable from its source
directory: allotment's own environment does not install it, so that nothing
there imports a package called ``placement`` by accident."""

from __future__ import annotations

import sys
from pathlib import Path

_FIXTURE_SOURCE = str(Path(__file__).resolve().parents[2] / "nova_fixture")
if _FIXTURE_SOURCE not in sys.path:
    sys.path.insert(0, _FIXTURE_SOURCE)
