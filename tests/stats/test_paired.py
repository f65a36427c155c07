"""Exact McNemar test, discordant counts and PairedComparison: hand-computed tables, scipy's
binomtest as the reference (test-only), records and input errors."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from mnemetric.errors import InputError
from mnemetric.stats import PairedComparison, compare_paired, discordant, mcnemar_exact, paired_bootstrap_diff
from mnemetric.stats.score import tango_interval


@pytest.mark.parametrize("b, c, expected", [
    (0, 5, 0.0625),                     # 2 * (1/2)^5 = 1/16
    (1, 6, 0.125),                      # 2 * (C(7,0) + C(7,1)) / 2^7 = 2 * 8/128
    (2, 10, 158 / 4096),                # 2 * (1 + 12 + 66) / 2^12
    (0, 1, 1.0),                        # 2 * 1/2, capped at 1
    (3, 3, 1.0),                        # 2 * P[X <= 3], X ~ Bin(6, 1/2) = 2 * 42/64 > 1 -> 1
    (0, 0, 1.0),                        # no discordant item: no evidence
    (0, 10, 2 / 1024),
])
def test_hand_computed_tables(b, c, expected):
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-15)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_against_scipy_binomtest():
    for b in range(31):
        for c in range(31):
            if b + c == 0:
                continue
            ref = binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue
            assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-12, abs=1e-300), (b, c)
    assert mcnemar_exact(480, 560) == pytest.approx(binomtest(480, 1040, 0.5).pvalue, rel=1e-9)


@given(st.integers(0, 300), st.integers(0, 300))
def test_symmetric_and_exact_fraction(b, c):
    p = mcnemar_exact(b, c)
    assert p == mcnemar_exact(c, b)
    assert 0 < p <= 1
    if b + c:
        naive = min(Fraction(1), 2 * Fraction(sum(comb(b + c, i) for i in range(min(b, c) + 1)), 2 ** (b + c)))
        assert p == float(naive)


@pytest.mark.parametrize("b, c, field", [(-1, 3, "b"), (2, 1.5, "c"), (True, 3, "b"), ("2", 3, "b")])
def test_bad_counts(b, c, field):
    with pytest.raises(InputError) as err:
        mcnemar_exact(b, c)
    assert err.value.problem.field == field


def test_discordant_hand_worked():
    a = [1, 1, 0, 0, 1, 0]
    b = [1, 0, 1, 1, 1, 0]
    assert discordant(a, b) == (1, 2)
    counts = discordant([True, False, True], [False, False, True])
    assert (counts.a_only, counts.b_only) == (1, 0)
    assert discordant([], []) == (0, 0)


def test_discordant_errors_name_the_index():
    with pytest.raises(InputError) as err:
        discordant([1, 0, 2], [1, 0, 1], source="runs.jsonl")
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == ("runs.jsonl", "index 2", "a")
    with pytest.raises(InputError) as err:
        discordant([1, 0], [1, 0.5])
    assert (err.value.problem.record, err.value.problem.field) == ("index 1", "b")
    with pytest.raises(InputError):
        discordant([1, 0], [1])


def test_compare_paired_worked_example():
    a = [1, 1, 0, 0, 1, 0]          # 3/6
    b = [1, 0, 1, 1, 1, 1]          # 5/6; a_only = 1 (item 2), b_only = 3 (items 3, 4, 6)
    result = compare_paired(a, b, resamples=300, seed=2)
    assert (result.n, result.a_mean, result.b_mean) == (6, 0.5, pytest.approx(5 / 6))
    assert result.diff == pytest.approx(1 / 3)
    assert (result.a_only, result.b_only) == (1, 3)
    assert result.p_value == pytest.approx(2 * (1 + 4) / 16)     # 2 P[X <= 1], X ~ Bin(4, 1/2) = 0.625
    boot = paired_bootstrap_diff(a, b, resamples=300, seed=2)
    assert (result.bootstrap_low, result.bootstrap_high) == boot.interval      # secondary, named
    assert result.interval == tango_interval(3, 1, 6)                          # primary: the score interval
    assert result.interval_method.startswith("Tango")
    assert result.to_record()["test"] == "mcnemar exact, two-sided"


def test_compare_paired_macro_and_float_values():
    a, b = [1, 0, 1, 1], [1, 1, 1, 0]
    strata = ["x", "x", "y", "y"]
    macro = compare_paired(a, b, strata, "macro", resamples=100, seed=0)
    # x: 1/2 -> 1, y: 1 -> 1/2; macro a = 3/4, macro b = 3/4
    assert (macro.a_mean, macro.b_mean, macro.diff) == (0.75, 0.75, 0.0)
    assert macro.p_value is None and (macro.a_only, macro.b_only) == (1, 1)   # McNemar only for micro
    floats = compare_paired([0.2, 0.4], [0.3, 0.9], resamples=50, seed=0)
    # not 0/1: the exact sign test (B higher on both items: 2 (1/2)^2 = 0.5) and the bootstrap interval
    assert floats.p_value == 0.5 and floats.test == "sign test exact, two-sided" and floats.a_only is None
    assert floats.interval == (floats.bootstrap_low, floats.bootstrap_high)
    assert floats.diff == pytest.approx(0.3)


def test_paired_comparison_record_round_trip():
    result = compare_paired([1, 0, 1, 0, 1], [1, 1, 1, 0, 0], resamples=100, seed=1)
    record = result.to_record()
    assert PairedComparison.from_record(record, file="cmp.json", line="comparison") == result
    with pytest.raises(InputError) as err:
        PairedComparison.from_record(dict(record, p_value="0.5"), file="cmp.json", line=2)
    assert (err.value.problem.record, err.value.problem.field) == ("line 2", "p_value")
    with pytest.raises(InputError):
        PairedComparison.from_record([record], file="cmp.json", line=1)
