"""The intervals and the one speed-up: values checked against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from speccascade.analysis.speed import speedup, suite_speedup
from speccascade.analysis.stats import Check, paired_difference, ratio_of_sums, wilson


def test_wilson_matches_the_closed_form_and_known_values():
    # 0 of 6: the percentile bootstrap says [0, 0]; Wilson's upper bound is z^2 / (n + z^2)
    lo, hi = wilson(0, 6)
    z = 1.959963984540054
    assert lo == 0.0
    assert hi == pytest.approx(z * z / (6 + z * z), abs=1e-12)
    assert hi == pytest.approx(0.390, abs=5e-4)
    # 81 of 263 (Newcombe 1998, Table I, example): 0.2553 to 0.3662
    lo, hi = wilson(81, 263)
    assert (lo, hi) == pytest.approx((0.2553, 0.3662), abs=5e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_paired_difference_by_hand_and_no_collapse():
    # 12 right in both, 9 only in a, 2 only in b, 7 in neither (n = 30), worked by hand:
    # Wilson 21/30 = [0.52124, 0.83336], 14/30 = [0.30232, 0.63858]; ad - bc = 66 > n/2, so
    # phi = (66 - 15) / sqrt(21 * 9 * 14 * 16) = 0.24786; L = 7/30 - 0.21512, U = 7/30 + 0.18420
    a = [True] * 12 + [True] * 9 + [False] * 2 + [False] * 7
    b = [True] * 12 + [False] * 9 + [True] * 2 + [False] * 7
    d, lo, hi = paired_difference(a, b)
    assert d == pytest.approx(7 / 30)
    assert (lo, hi) == pytest.approx((0.01822, 0.41753), abs=2e-4)
    # two methods that never disagree: no collapse to [0, 0] (the percentile bootstrap's)
    same = [True] * 20
    d, lo, hi = paired_difference(same, same)
    width = 1 - wilson(20, 20)[0]
    assert d == 0.0 and (lo, hi) == pytest.approx((-width, width))
    assert width > 0.1


def test_ratio_of_sums_and_its_bootstrap():
    num, den = [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]
    point, lo, hi = ratio_of_sums(num, den)
    assert point == 2.0 and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)
    rng = np.random.default_rng(1)
    x = rng.uniform(1, 2, 40)
    y = x / rng.uniform(1.2, 1.8, 40)
    point, lo, hi = ratio_of_sums(x, y)
    assert lo < point < hi
    assert point == pytest.approx(x.sum() / y.sum())


def test_speedup_is_the_ratio_of_medians():
    assert speedup([1.0, 3.0, 2.0], [0.5, 0.4, 10.0]) == pytest.approx(2.0 / 0.5)
    s, lo, hi = suite_speedup([[1.0, 1.2, 0.9], [2.0, 2.2, 1.8]], [[0.5], [1.0]])
    assert s == pytest.approx((1.0 + 2.0) / (0.5 + 1.0))
    with pytest.raises(ValueError):
        speedup([1.0], [])


def test_a_check_is_met_only_where_its_interval_clears_it():
    assert Check("x", 1.6, 1.52, 1.7, ">=", 1.5).verdict == "met"
    assert Check("x", 1.6, 1.4, 1.7, ">=", 1.5).verdict == "not shown"
    assert Check("x", 1.4, 1.3, 1.55, ">=", 1.5).verdict == "missed"
    assert Check("x", 0.2, 0.1, 0.28, "<=", 0.3).verdict == "met"
    assert Check("x", 0.2, 0.1, 0.39, "<=", 0.3).verdict == "not shown"
    assert not math.isnan(Check("x", 0.2, 0.1, 0.39, "<=", 0.3).as_dict()["value"])
