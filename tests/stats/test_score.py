"""Tango's score interval for paired proportions, MOVER over strata and Holm's adjustment: closed
forms worked by hand, a naive second implementation of Tango's interval (the restricted maximum
likelihood found numerically with scipy, the root with brentq: no quadratic, no bisection shared
with the code under test), and Holm against the step-down procedure written out."""

from __future__ import annotations

import itertools
import math

import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import norm

from mnemetric.stats.score import familywise_rate, holm, mover_mean, tango_interval

Z = norm.ppf(0.975)


def _restricted_q(x: int, y: int, n: int, delta: float) -> float:
    """argmax over q = p_y in [max(0, -delta), (1 - delta)/2] of the multinomial log-likelihood
    x log(q + delta) + y log q + (n - x - y) log(1 - 2q - delta), found numerically."""
    lo, hi = max(0.0, -delta), (1 - delta) / 2

    def negll(q: float) -> float:
        out = 0.0
        for count, prob in ((x, q + delta), (y, q), (n - x - y, 1 - 2 * q - delta)):
            if count:
                out -= count * math.log(max(prob, 1e-300))
        return out

    res = minimize_scalar(negll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
    return min((lo, hi, res.x), key=negll)


def _naive_tango(x: int, y: int, n: int, z: float = Z) -> tuple[float, float]:
    def score(delta: float) -> float:
        q = _restricted_q(x, y, n, delta)
        var = (2 * q + delta - delta * delta) / n     # var of (x - y)/n at the restricted estimate
        gap = (x - y) / n - delta
        if var > 0:
            return gap / math.sqrt(var)
        return 0.0 if gap == 0 else math.copysign(math.inf, gap)

    d = (x - y) / n
    eps = 1e-9
    low = -1.0 if score(-1 + eps) <= z else brentq(lambda t: score(t) - z, -1 + eps, d, xtol=1e-12)
    high = 1.0 if score(1 - eps) >= -z else brentq(lambda t: score(t) + z, d, 1 - eps, xtol=1e-12)
    return low, high


@pytest.mark.parametrize("x, y, n", [(3, 1, 6), (0, 4, 30), (4, 0, 30), (2, 2, 10), (7, 1, 21), (1, 7, 21),
                                     (12, 5, 30), (30, 0, 30), (0, 29, 30), (40, 20, 160), (9, 3, 500),
                                     (60, 55, 500), (1, 0, 8)])
def test_matches_the_naive_implementation(x, y, n):
    low, high = tango_interval(x, y, n)
    ref_low, ref_high = _naive_tango(x, y, n)
    assert low == pytest.approx(ref_low, abs=2e-7) and high == pytest.approx(ref_high, abs=2e-7)
    assert low <= (x - y) / n <= high


@pytest.mark.parametrize("n", [1, 6, 30, 133, 500])
def test_no_discordant_pair_is_not_degenerate(n):
    # x = y = 0: the restricted estimate is q = max(0, -delta), so Z(delta)^2 = n |delta| / (1 - |delta|)
    # and the bounds solve that = z^2: |delta| = z^2 / (n + z^2), e.g. 0.1135 at n = 30
    low, high = tango_interval(0, 0, n)
    half = Z * Z / (n + Z * Z)
    assert low == pytest.approx(-half, abs=1e-12) and high == pytest.approx(half, abs=1e-12)
    assert high > 0


def test_four_one_way_flips_of_thirty():
    # the README's case: A right on 4 questions B misses, nothing the other way; McNemar p = 0.125
    low, high = tango_interval(0, 4, 30)
    assert (low, high) == pytest.approx(_naive_tango(0, 4, 30), abs=2e-7)
    assert -0.30 < low < high < 0          # the asymptotic score interval is not the exact test


def test_symmetry_and_level():
    for x, y, n in [(3, 1, 6), (12, 5, 30), (9, 3, 500)]:
        low, high = tango_interval(x, y, n)
        mlow, mhigh = tango_interval(y, x, n)
        assert (mlow, mhigh) == pytest.approx((-high, -low), abs=1e-12)
        narrow = tango_interval(x, y, n, 0.80)
        assert low < narrow[0] <= narrow[1] < high
    assert tango_interval(0, 0, 0) is None
    with pytest.raises(ValueError):
        tango_interval(20, 20, 30)


def test_mover_by_hand():
    # two strata: d = (0.1, -0.3), intervals (-0.1, 0.4), (-0.6, 0.0); K = 2
    mean, low, high = mover_mean([0.1, -0.3], [(-0.1, 0.4), (-0.6, 0.0)])
    assert mean == pytest.approx(-0.1)
    assert low == pytest.approx(-0.1 - math.sqrt(0.2 ** 2 + 0.3 ** 2) / 2)
    assert high == pytest.approx(-0.1 + math.sqrt(0.3 ** 2 + 0.3 ** 2) / 2)


def _naive_holm(p: list[float], alpha: float) -> set[int]:
    """Holm's procedure as published: reject the smallest while p_(i) <= alpha / (m - i + 1)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out = set()
    for rank, i in enumerate(order):
        if p[i] < alpha / (len(p) - rank):
            out.add(i)
        else:
            break
    return out


def test_holm_worked_and_against_the_procedure():
    # m = 4: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, max(0.04, 0.06), max(0.06, 0.06), max(0.06, 0.5)
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.4, 0.9]) == pytest.approx([0.8, 0.9])
    assert holm([]) == [] and holm([0.7]) == [0.7]
    grid = [0.001, 0.004, 0.0125, 0.02, 0.049, 0.2, 1.0]
    for p in itertools.product(grid, repeat=4):
        adjusted = holm(list(p))
        assert {i for i, a in enumerate(adjusted) if a < 0.05} == _naive_holm(list(p), 0.05), p


def test_familywise_rate():
    assert familywise_rate(6, 0.05) == pytest.approx(0.2649, abs=1e-4)
    assert familywise_rate(1, 0.05) == pytest.approx(0.05)
