"""Wilson and Clopper-Pearson intervals: scipy as the reference (test-only), hand-worked edges,
properties, and a seeded coverage simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta, binom, binomtest, norm

from mnemetric.errors import ConfigError, InputError
from mnemetric.stats import clopper_pearson, normal_quantile, wilson

TOL = 1e-9
LEVELS = (0.90, 0.95, 0.99)


def _grid() -> list[tuple[int, int]]:
    """Every k for n <= 30, and spread-out k (edges included) for a few larger n."""
    cases = [(k, n) for n in range(1, 31) for k in range(n + 1)]
    for n in (57, 100, 133, 500, 1000):
        cases += [(k, n) for k in sorted({0, 1, 2, 3, n // 10, n // 3, n // 2, n - 3, n - 2, n - 1, n})]
    return cases


def test_clopper_pearson_matches_scipy_beta_quantiles():
    k, n = (np.array(col) for col in zip(*_grid()))
    for level in LEVELS:
        tail = (1 - level) / 2
        with np.errstate(all="ignore"):   # beta(0, .) / beta(., 0) at the edges: replaced below
            ref_low = np.where(k == 0, 0.0, beta.ppf(tail, k, n - k + 1))
            ref_high = np.where(k == n, 1.0, beta.ppf(1 - tail, k + 1, n - k))
        ours = np.array([clopper_pearson(int(a), int(b), level) for a, b in zip(k, n)])
        worst = max(np.abs(ours[:, 0] - ref_low).max(), np.abs(ours[:, 1] - ref_high).max())
        assert worst < TOL, (level, worst)


def test_clopper_pearson_matches_scipy_binomtest_exact():
    cases = [(k, n) for n in (1, 2, 5, 6, 8, 13, 30) for k in range(n + 1)]
    cases += [(0, 133), (7, 133), (133, 133), (250, 500), (3, 100_000), (50_000, 100_000), (99_999, 100_000)]
    for k, n in cases:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        ours = clopper_pearson(k, n)
        assert ours[0] == pytest.approx(ci.low, abs=TOL) and ours[1] == pytest.approx(ci.high, abs=TOL), (k, n)


def test_wilson_matches_scipy_binomtest_wilson():
    worst = 0.0
    for k, n in [(k, n) for k, n in _grid() if n <= 20 or n > 30]:
        for level in LEVELS:
            ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            ours = wilson(k, n, level)
            worst = max(worst, abs(ours[0] - ci.low), abs(ours[1] - ci.high))
    assert worst < TOL, worst


def test_zero_of_six_hand_worked():
    # Clopper-Pearson, k = 0: P[X <= 0] = (1 - p)^6 = 0.025  ->  p = 1 - 0.025^(1/6) = 0.45926
    assert clopper_pearson(0, 6) == (0.0, pytest.approx(1 - 0.025 ** (1 / 6), abs=1e-12))
    assert clopper_pearson(0, 6)[1] == pytest.approx(0.4592581264, abs=1e-9)
    # Wilson, k = 0: centre + half = (z^2/2 + z * z/2) / (n + z^2) = z^2 / (n + z^2) = 0.39033
    z = 1.959963984540054
    assert wilson(0, 6) == (0.0, pytest.approx(z * z / (6 + z * z), abs=1e-12))
    assert wilson(0, 6)[1] == pytest.approx(0.3903342879, abs=1e-9)


@pytest.mark.parametrize("n", [1, 2, 6, 30, 133, 1000])
def test_edges_are_exact(n):
    tail = 0.025
    for f in (wilson, clopper_pearson):
        low0, _ = f(0, n)
        _, high_n = f(n, n)
        assert low0 == 0.0 and isinstance(low0, float)
        assert high_n == 1.0 and isinstance(high_n, float)
    # Clopper-Pearson k = n: P[X >= n] = p^n = alpha/2  ->  low = (alpha/2)^(1/n)
    assert clopper_pearson(n, n)[0] == pytest.approx(tail ** (1 / n), rel=1e-11)
    assert clopper_pearson(0, n)[1] == pytest.approx(1 - tail ** (1 / n), rel=1e-11)


def test_no_items_no_interval():
    assert wilson(0, 0) is None
    assert clopper_pearson(0, 0) is None


def test_one_of_two_hand_worked():
    # P[X >= 1 | 2, p] = 1 - (1-p)^2 = 0.025 -> p = 1 - sqrt(0.975); by symmetry high = sqrt(0.975)
    low, high = clopper_pearson(1, 2)
    assert low == pytest.approx(1 - math.sqrt(0.975), rel=1e-11)  # 12 significant digits published
    assert high == pytest.approx(math.sqrt(0.975), abs=1e-12)


def test_normal_quantile():
    assert normal_quantile(0.95) == pytest.approx(norm.ppf(0.975), abs=1e-14)
    assert normal_quantile(0.99) == pytest.approx(2.5758293035489, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 200), data=st.data(), level=st.sampled_from(LEVELS))
def test_properties(n, data, level):
    k = data.draw(st.integers(0, n))
    for f in (wilson, clopper_pearson):
        low, high = f(k, n, level)
        assert 0.0 <= low <= k / n <= high <= 1.0
        mirror_low, mirror_high = f(n - k, n, level)          # symmetry k <-> n - k
        assert low == pytest.approx(1 - mirror_high, abs=1e-12)
        assert high == pytest.approx(1 - mirror_low, abs=1e-12)
        wider = f(k, n, 0.995)                                  # higher level -> wider interval
        assert wider[0] <= low + 1e-15 and wider[1] >= high - 1e-15


@pytest.mark.parametrize("k, n, field", [(7, 6, "k"), (-1, 6, "k"), (0, -1, "n"), (1.0, 6, "k"), (1, 6.5, "n"),
                                         (True, 6, "k"), ("3", 6, "k")])
def test_bad_counts_are_input_errors(k, n, field):
    for f in (wilson, clopper_pearson):
        with pytest.raises(InputError) as err:
            f(k, n)
        assert err.value.problem.field == field


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, "0.95", None, True])
def test_bad_level_is_config_error(level):
    for f in (wilson, clopper_pearson):
        with pytest.raises(ConfigError):
            f(1, 6, level)


def test_numpy_integer_counts_accepted():
    assert clopper_pearson(np.int64(2), np.int32(6)) == clopper_pearson(2, 6)


# ------------------------------------------------------------------------------------------
# Coverage simulation (seeded, deterministic). Measured on 2026-12 with this seed:
#   Clopper-Pearson 0.9563-0.9922 at every grid point (never below nominal: an exact interval);
#   Wilson 0.9228-0.9922, mean 0.9645 (it dips below nominal at some p, e.g. n = 30, p = 0.3/0.7).
# ------------------------------------------------------------------------------------------

COVERAGE_DRAWS = 4000
SE = math.sqrt(0.95 * 0.05 / COVERAGE_DRAWS)   # Monte-Carlo standard error at the nominal rate


def _coverage(table: list[tuple[float, float]], n: int, p: float, ks: np.ndarray) -> tuple[float, float]:
    """(simulated coverage over the drawn k, exact coverage sum_k P[k] 1[p in CI(k)])."""
    inside = np.array([low <= p <= high for low, high in table])
    exact = float(binom.pmf(np.arange(n + 1), n, p)[inside].sum())
    return float(inside[ks].mean()), exact


def test_coverage_simulation_wilson_and_clopper_pearson():
    rng = np.random.Generator(np.random.PCG64(7))
    wilson_cov = []
    for n in (6, 30, 133):
        cp_table = [clopper_pearson(k, n) for k in range(n + 1)]
        wi_table = [wilson(k, n) for k in range(n + 1)]
        for p in (0.1, 0.3, 0.5, 0.7, 0.9):
            ks = rng.binomial(n, p, size=COVERAGE_DRAWS)
            cp_sim, cp_exact = _coverage(cp_table, n, p, ks)
            wi_sim, wi_exact = _coverage(wi_table, n, p, ks)
            # the simulation agrees with the exact coverage (summed from scipy's binomial pmf)
            assert abs(cp_sim - cp_exact) < 4 * SE and abs(wi_sim - wi_exact) < 4 * SE, (n, p)
            # Clopper-Pearson guarantees coverage >= level for every p; allow 3 SE of noise
            assert cp_exact >= 0.95 and cp_sim >= 0.95 - 3 * SE, (n, p, cp_sim)
            # Wilson only on average; its known dips (Brown, Cai & DasGupta 2001) stay above 0.90 here
            assert wi_sim >= 0.90, (n, p, wi_sim)
            wilson_cov.append(wi_sim)
    print(f"Wilson coverage: min {min(wilson_cov):.4f}, mean {np.mean(wilson_cov):.4f}")
    assert 0.94 <= float(np.mean(wilson_cov)) <= 0.98


def test_clopper_pearson_bounds_are_published_to_12_significant_digits():
    """A bound's last ulps depend on the CPU's SIMD log/exp; the published value is rounded so that
    metric files are the same bytes on every machine."""
    for k, n in ((7, 13), (21, 36), (1, 100_000), (99_999, 100_000)):
        for bound in clopper_pearson(k, n):
            assert bound == float(f"{bound:.12g}"), (k, n, bound)
