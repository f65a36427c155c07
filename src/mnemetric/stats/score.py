"""Score intervals for paired 0/1 comparisons, their combination over strata, and Holm's adjustment.

Generic statistics (no benchmark knowledge), a Mnemetric addition. Two runs A and B score the same
n items 0/1; x = #{B right, A wrong} (``b_only``), y = #{A right, B wrong} (``a_only``); the
accuracy difference is Delta = p_x - p_y (B minus A), estimated by (x - y) / n.

Tango's score interval (Tango 1998, "Equivalence test and confidence interval for the difference in
proportions for the paired-sample design", Stat. Med. 17:891-908; recommended by Fagerland,
Lydersen & Laake 2014, Stat. Methods Med. Res. 24:224-254). For a candidate Delta, the restricted
maximum-likelihood estimate of p_y under p_x = p_y + Delta is the root in [max(0, -Delta), 1] of
2n q^2 + B q + C = 0 (the score equation of the multinomial likelihood; derived again in the test)::

    B = -x - y + (2n - x + y) Delta,     C = -y Delta (1 - Delta),
    q = (sqrt(B^2 - 4 (2n) C) - B) / (4n)

and the score statistic is::

    Z(Delta) = (x - y - n Delta) / sqrt(n (2 q + Delta (1 - Delta)))

The interval is {Delta : |Z(Delta)| <= z}, z = Phi^-1((1 + level)/2): Z decreases in Delta, so each
bound is one root, found by bisection to 1e-14 (the low bound on [-1, d^], the high on [d^, 1]).
Unlike the percentile bootstrap it is never [0, 0]: with no discordant pair it is
[-z^2/(n + z^2), z^2/(n + z^2)] (e.g. +-0.114 at n = 30, level 0.95). Where the denominator
vanishes (Delta = d^ at x = y = 0, or Delta = +-1 at x or y = n) Z is 0 or +-infinity by its
numerator's sign. Coverage is checked by simulation in tests/stats/test_simulation.py.

Combination over strata (:func:`mover_mean`, for a task-averaged difference, the unweighted mean of
K stratum differences d_k with intervals [l_k, u_k] from independent strata): the MOVER of Zou &
Donner 2008 (Stat. Med. 27:1693-1702), the square-and-add step of Newcombe 1998::

    d = (1/K) sum d_k,   low = d - sqrt(sum (d_k - l_k)^2) / K,   high = d + sqrt(sum (u_k - d_k)^2) / K

Holm's step-down adjustment (Holm 1979, Scand. J. Statist. 6:65-70), for m p-values sorted
p_(1) <= ... <= p_(m)::

    p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))

rejecting where p~ < alpha keeps the family-wise error rate (the chance of any false rejection
among the m tests) at most alpha, under any dependence between the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mnemetric.stats.intervals import normal_quantile

TANGO_METHOD = "Tango score interval for paired proportions (Tango 1998)"
MOVER_METHOD = "Tango score intervals per stratum, combined by MOVER (Zou & Donner 2008)"
_TOL = 1e-14


def _score(x: int, y: int, n: int, delta: float) -> float:
    """Tango's Z(delta) (module docstring); 0 or +-inf where its denominator vanishes."""
    b = -x - y + (2 * n - x + y) * delta
    c = -y * delta * (1 - delta)
    q = (math.sqrt(max(0.0, b * b - 8 * n * c)) - b) / (4 * n)
    num = x - y - n * delta
    var = n * (2 * q + delta * (1 - delta))
    if var <= 0:
        return 0.0 if num == 0 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def _root(x: int, y: int, n: int, lo: float, hi: float, target: float) -> float:
    """The delta in [lo, hi] with Z(delta) = target, Z decreasing (bisection)."""
    for _ in range(200):
        if hi - lo <= _TOL:
            break
        mid = (lo + hi) / 2
        if _score(x, y, n, mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def tango_interval(b_only: int, a_only: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """Tango's score interval for p_B - p_A from the discordant counts of n pairs; None for n = 0.

    ``b_only`` = x (B right, A wrong), ``a_only`` = y (A right, B wrong); needs x + y <= n.
    """
    z = normal_quantile(level)
    x, y = int(b_only), int(a_only)
    if n <= 0:
        return None
    if x < 0 or y < 0 or x + y > n:
        raise ValueError(f"discordant counts {x} + {y} must lie in [0, n = {n}]")
    d = (x - y) / n
    low = -1.0 if _score(x, y, n, -1.0) <= z else _root(x, y, n, -1.0, d, z)
    high = 1.0 if _score(x, y, n, 1.0) >= -z else _root(x, y, n, d, 1.0, -z)
    return max(-1.0, min(low, d)), min(1.0, max(high, d))


def mover_mean(diffs: Sequence[float], intervals: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """(mean difference, low, high): the MOVER combination of K stratum intervals (module docstring)."""
    k = len(diffs)
    mean = sum(diffs) / k
    low = mean - math.sqrt(sum((d - lo) ** 2 for d, (lo, _) in zip(diffs, intervals))) / k
    high = mean + math.sqrt(sum((hi - d) ** 2 for d, (_, hi) in zip(diffs, intervals))) / k
    return mean, low, high


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (module docstring)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def familywise_rate(m: int, alpha: float) -> float:
    """1 - (1 - alpha)^m: the chance of at least one unadjusted false rejection among m independent
    tests at level alpha, all nulls true (what Holm's adjustment brings back to at most alpha)."""
    return 1 - (1 - alpha) ** m
