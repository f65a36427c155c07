"""Minimal detectable difference (Connor 1987): a published worked example, a naive bisection on
Connor's power equation written here with scipy's normal distribution, properties, a seeded
Monte-Carlo power check, and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from mnemetric.errors import ConfigError, InputError
from mnemetric.stats import minimal_detectable_difference, paired_power


def _connor_n(delta: float, psi: float, alpha: float = 0.05, power: float = 0.80) -> float:
    """Connor's sample size n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2."""
    z_a, z_b = norm.ppf(1 - alpha / 2), norm.ppf(power)
    return (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - delta * delta)) ** 2 / delta ** 2


def _naive_mdd(n: int, psi: float, alpha: float, power: float) -> float:
    """Bisection on Phi((d sqrt(n) - z_a sqrt(psi)) / sqrt(psi - d^2)) = power over d in (0, psi)."""
    z_a = norm.ppf(1 - alpha / 2)
    lo, hi = 0.0, psi
    for _ in range(200):
        mid = (lo + hi) / 2
        if norm.cdf((mid * math.sqrt(n) - z_a * math.sqrt(psi)) / math.sqrt(psi - mid * mid)) < power:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def test_published_worked_example():
    # p01 = 0.45, p10 = 0.05 (psi 0.5, delta 0.4), alpha 0.05 two-sided, power 0.80: n = 22.01 -> 23
    # pairs (Connor 1987 p. 209, as used by the powerandsamplesize.com McNemar calculator)
    assert _connor_n(0.4, 0.5) == pytest.approx(22.0113, abs=1e-4)
    assert minimal_detectable_difference(22, 0.5, discordance=0.5, method="normal").mdd > 0.4
    assert minimal_detectable_difference(23, 0.5, discordance=0.5, method="normal").mdd < 0.4


@pytest.mark.parametrize("n", [10, 30, 60, 133, 500, 5000])
@pytest.mark.parametrize("p, alpha, power", [(0.6, 0.05, 0.80), (0.5, 0.01, 0.90), (0.85, 0.05, 0.80), (0.3, 0.10, 0.5)])
def test_matches_naive_bisection_and_inverts_sample_size(n, p, alpha, power):
    result = minimal_detectable_difference(n, p, alpha, power, method="normal")
    psi = 2 * p * (1 - p)
    naive = _naive_mdd(n, psi, alpha, power)
    if naive >= psi * (1 - 1e-12):          # not reachable inside (0, psi)
        assert result.mdd is None
        return
    assert result.mdd == pytest.approx(naive, abs=1e-9)
    assert _connor_n(result.mdd, psi, alpha, power) == pytest.approx(n, rel=1e-9)


def test_default_assumption_is_recorded():
    result = minimal_detectable_difference(500, 0.6, method="normal")
    assert result.discordance == pytest.approx(0.48)                     # 2 * 0.6 * 0.4
    assert result.discordance_rule.startswith("2p(1-p)")
    record = result.to_record()
    assert record["mdd"] == result.mdd and "Connor (1987)" in record["method"]
    assert "80% power" in record["assumption"] and "0.48" in record["assumption"]
    given = minimal_detectable_difference(500, 0.6, discordance=0.48, method="normal")
    assert given.mdd == result.mdd and given.discordance_rule == "given"
    # worked: z_a = 1.95996, z_b = 0.84162, s = sqrt(500):
    # sqrt(.48) (s z_a + z_b sqrt(500 - z_a^2 + z_b^2)) / (500 + z_b^2) = 0.086599
    assert result.mdd == pytest.approx(0.0865994, abs=1e-6)


def test_monotone_in_n_and_discordance():
    mdds = [minimal_detectable_difference(n, 0.6, method="normal").mdd for n in (30, 60, 133, 500, 2000)]
    assert all(x > y for x, y in zip(mdds, mdds[1:]))
    by_psi = [minimal_detectable_difference(500, 0.6, discordance=d, method="normal").mdd for d in (0.05, 0.1, 0.2, 0.48)]
    assert all(x < y for x, y in zip(by_psi, by_psi[1:]))


def test_nothing_detectable():
    # n = 6, p = 0.6: the formula gives 0.60 > psi = 0.48, impossible -> None
    assert minimal_detectable_difference(6, 0.6, method="normal").mdd is None
    assert minimal_detectable_difference(3, 0.5, method="normal").mdd is None              # n < z_a^2 = 3.84
    assert minimal_detectable_difference(0, 0.5, method="normal").mdd is None
    assert minimal_detectable_difference(500, 1.0, method="normal").mdd is None            # psi = 0: runs never differ


def test_paired_power():
    n, psi = 133, 0.48
    mdd = minimal_detectable_difference(n, 0.6, method="normal").mdd
    # one tail is exactly the requested power; the far tail adds a negligible amount
    assert 0.80 <= paired_power(n, mdd, psi) < 0.80 + 1e-6
    assert paired_power(n, 0.0, psi) == 0.05
    z = norm.ppf(0.975)
    s = math.sqrt(psi - 0.1 ** 2)
    root_n, root_psi = math.sqrt(n), math.sqrt(psi)
    expected = norm.cdf((0.1 * root_n - z * root_psi) / s) + norm.cdf((-0.1 * root_n - z * root_psi) / s)
    assert paired_power(n, -0.1, psi) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ConfigError):
        paired_power(n, 0.5, psi)


def test_monte_carlo_power_at_the_mdd():
    # 4,000 simulated pairs of runs (n = 400, p_A = 0.6, psi = 0.48, delta = MDD) tested with the
    # McNemar z statistic (c - b) / sqrt(b + c) at |z| > 1.96: the rejection rate is the power.
    # SE = sqrt(.8 * .2 / 4000) = 0.0063; band 0.77-0.83 (about +-4.7 SE; the approximation
    # itself is good to a point or so at this n).
    n, p = 400, 0.6
    result = minimal_detectable_difference(n, p, method="normal")
    psi, delta = result.discordance, result.mdd
    p10, p01 = (psi - delta) / 2, (psi + delta) / 2
    rng = np.random.Generator(np.random.PCG64(2024))
    cells = rng.multinomial(n, [p10, p01, 1 - psi], size=4000)
    b, c = cells[:, 0], cells[:, 1]
    z = (c - b) / np.sqrt(np.maximum(b + c, 1))
    rate = float(np.mean(np.abs(z) > norm.ppf(0.975)))
    print(f"simulated power at MDD {delta:.4f} (n {n}): {rate:.3f}")
    assert 0.77 <= rate <= 0.83


@pytest.mark.parametrize("kwargs, key", [({"alpha": 0.0}, "alpha"), ({"alpha": 1.2}, "alpha"), ({"power": 0.3}, "power"),
                                         ({"power": 1.0}, "power"), ({"discordance": 1.5}, "discordance")])
def test_bad_settings(kwargs, key):
    with pytest.raises(ConfigError) as err:
        minimal_detectable_difference(100, 0.6, **kwargs)
    assert err.value.key == key


def test_bad_inputs():
    with pytest.raises(ConfigError) as err:
        minimal_detectable_difference(100, 1.5)
    assert err.value.key == "p"
    for n in (-1, 2.5, True):
        with pytest.raises(InputError):
            minimal_detectable_difference(n, 0.5)


def _naive_exact_power(n: int, delta: float, psi: float, alpha: float) -> float:
    """Exact power written the slow way: every (D, X) with scipy's binomial pmf and the project's
    own exact McNemar p-value deciding each table (no critical values, no truncation)."""
    from scipy.stats import binom

    from mnemetric.stats import mcnemar_exact

    pi = (psi + delta) / (2 * psi)
    total = 0.0
    for d in range(n + 1):
        weight = binom.pmf(d, n, psi)
        total += weight * sum(binom.pmf(x, d, pi) for x in range(d + 1) if mcnemar_exact(d - x, x) <= alpha)
    return total


@pytest.mark.parametrize("n, delta, psi, alpha", [(10, 0.3, 0.5, 0.05), (30, 0.2, 0.48, 0.05), (30, 0.0, 0.18, 0.05),
                                                  (60, 0.1, 0.3, 0.01), (45, 0.15, 0.15, 0.10)])
def test_exact_power_matches_naive_enumeration(n, delta, psi, alpha):
    from mnemetric.stats.power import exact_mcnemar_power

    assert exact_mcnemar_power(n, delta, psi, alpha) == pytest.approx(_naive_exact_power(n, delta, psi, alpha), abs=1e-12)


@pytest.mark.parametrize("n", [30, 133])
def test_exact_mdd_reaches_the_power_the_normal_one_misses(n):
    from mnemetric.stats.power import exact_mcnemar_power

    exact = minimal_detectable_difference(n, 0.6)
    normal = minimal_detectable_difference(n, 0.6, method="normal")
    assert exact.method == "exact" and "exact" in exact.to_record()["method"]
    # the measurement: the exact test has 0.75-0.78 power at the normal MDD
    assert 0.74 < _naive_exact_power(n, normal.mdd, 0.48, 0.05) < 0.79
    assert exact.mdd > normal.mdd
    assert _naive_exact_power(n, exact.mdd, 0.48, 0.05) >= 0.80 - 1e-9
    assert exact_mcnemar_power(n, exact.mdd - 1e-6, 0.48) < 0.80


def test_exact_mdd_falls_back_to_the_labelled_approximation_for_large_n():
    result = minimal_detectable_difference(5000, 0.6)
    assert result.method == "normal" and "normal approximation" in result.to_record()["method"]
