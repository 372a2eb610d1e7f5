"""Microversion negotiation from the one header it reads, remembered per
value (allotment/api/microversion.py)."""

from __future__ import annotations

import pytest

from allotment import errors
from allotment.api import microversion

VALUES = [None, "", "placement 1.10", "placement latest", "PLACEMENT 1.2",
          "compute 2.1, placement 1.5", "placement 1.5, compute 2.1",
          "placement  1.39 ", "compute 2.90"]


@pytest.mark.parametrize("value", VALUES)
def test_the_same_version_as_negotiating_all_headers(value):
    headers = [("accept", "application/json"), ("x-auth-token", "admin")]
    if value is not None:
        headers.append((microversion.HEADER, value))
    expected = microversion.from_headers(headers)
    got = microversion.from_header_value(value)
    assert (got, got.min_version, got.max_version) == (
        expected, expected.min_version, expected.max_version)
    # Remembered: the next request with this value reuses the answer.
    assert microversion.from_header_value(value) is got


@pytest.mark.parametrize(("value", "error"), [
    ("placement 1.40", errors.NotAcceptable), ("placement 2.0", errors.NotAcceptable),
    ("placement 1.a", errors.BadRequest), ("placement one", errors.BadRequest)])
def test_refusals_are_raised_every_time(value, error):
    for _ in range(2):
        with pytest.raises(error, match="Invalid microversion"):
            microversion.from_header_value(value)
    assert value not in microversion._KNOWN


def test_parsed_minimums_compare_as_versions():
    for _ in range(2):
        assert microversion.parse("1.10") == (1, 10) > microversion.parse("1.9")
        with pytest.raises(TypeError):
            microversion.parse("1.x")  # never remembered as anything
