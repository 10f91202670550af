"""The bench's split of CPU into a fixed part and a part per object (scripts/bench/report.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench.measure import Sample  # noqa: E402
from bench.report import cpu_split  # noqa: E402


def samples(*cpu: float) -> list[Sample]:
    return [Sample(1.0, c, 30.0, 0, "", "") for c in cpu]


def test_the_line_through_the_smallest_and_largest_size_gives_fixed_and_per_object_cpu():
    results = {
        2000: {"tool": samples(0.60, 0.56, 0.58), "ceiling": samples(0.28, 0.30, 0.29)},
        5000: {"tool": samples(1.2, 1.1), "ceiling": samples(0.7)},
        10000: {"tool": samples(2.0, 1.98, 2.02), "ceiling": samples(1.49, 1.51, 1.50)},
    }
    split = cpu_split(results)
    assert split["tool"] == pytest.approx((0.225, 0.1775))  # medians 0.58 s at 2,000 and 2.0 s at 10,000
    assert split["ceiling"] == pytest.approx((-0.0125, 0.15125))


def test_one_size_gives_no_split():
    assert cpu_split({2000: {"tool": samples(0.5), "ceiling": samples(0.3)}}) == {}
