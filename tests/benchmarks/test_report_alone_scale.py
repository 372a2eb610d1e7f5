"""``scripts/benchmark mix --report-alone-scale``: each service's reports
alone at a rate of its own, the others at ``--report-scale``."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.side_by_side.mix_run import alone_scale, parse_scales


def test_each_service_at_its_own_rate():
    args = argparse.Namespace(report_scale=0.1,
                              report_alone_scale=parse_scales("allotment=1"))
    assert alone_scale(args, "allotment") == 1.0
    assert alone_scale(args, "allotment, randomized") == 1.0
    assert alone_scale(args, "upstream") == 0.1
    both = parse_scales("upstream=0.05, allotment=2")
    assert both == {"upstream": 0.05, "allotment": 2.0}


@pytest.mark.parametrize("text", ["nova=1", "allotment", "allotment="])
def test_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_scales(text)
