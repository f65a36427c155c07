"""Confidence intervals for a proportion k/n: Wilson score and Clopper-Pearson (exact).

Generic statistics (no benchmark knowledge), a Mnemetric addition: upstream LongMemEval reports
point accuracies only. Why not the percentile bootstrap for a proportion: with 0 of 6 correct
every resample is 0 of 6, so the bootstrap says [0, 0]; six questions cannot rule out an accuracy
of 0.39 (Wilson) or 0.46 (Clopper-Pearson).

Notation: k successes out of n trials, level = 1 - alpha (e.g. 0.95), z = Phi^-1((1 + level)/2)
the standard normal quantile (stdlib ``statistics.NormalDist``, Wichura's AS241, ~1e-16 relative).

Wilson score interval (Wilson 1927, JASA 22:209-212; in the form of Newcombe 1998, Stat. Med.
17:857-872, method 3), with p^ = k/n::

    centre = (k + z^2/2) / (n + z^2)
    half   = z / (n + z^2) * sqrt(k (n - k) / n + z^2 / 4)
    [centre - half, centre + half]

Clopper-Pearson interval (Clopper & Pearson 1934, Biometrika 26:404-413)::

    low  = the p with P[X >= k | n, p] = alpha/2,    X ~ Binomial(n, p)
    high = the p with P[X <= k | n, p] = alpha/2

(equivalently the alpha/2 quantile of Beta(k, n - k + 1) and the 1 - alpha/2 quantile of
Beta(k + 1, n - k)). Edge rules, exact for both methods: k = 0 -> low = 0.0 exactly;
k = n -> high = 1.0 exactly; n = 0 -> None (no interval, never NaN).

Method and accuracy of Clopper-Pearson (no scipy at run time). Both bounds solve an upper
binomial tail T(m, q) = P[Y >= m | n, q] = sum_{j=m..n} C(n, j) q^j (1-q)^(n-j) = alpha/2:
``low`` with m = k, q = p; ``high`` with m = n - k, q = 1 - p (as P[X <= k | p] = P[n - X >= n - k]),
where log q and log(1 - q) come from log(p) and log1p(-p), so 1 - p is never formed and a small
``high`` keeps its relative precision. T is summed in log space (log-sum-exp): log C(n, m) is the
log of the exact integer ``math.comb(n, m)`` (to an ulp; when C(n, m) exceeds e^40000, where
comb gets slow, lgamma differences, abs. error ~ n log(n) 1e-16), then the log ratios
log(n - j) - log(j + 1) are accumulated. At the root, m lies in the upper tail of Binomial(n, q), so the terms that
matter are the first few sqrt(m) of the sum, where the accumulated rounding is a few ulps; and the
log-tail is steep in p exactly when the logs are large, so the root moves by less still.
T is monotone in p; the root is bracketed by bisection generalised to up to 63 interior points
per step (one vectorised evaluation; the bracket shrinks 64-fold; fewer points when n > ~4,000,
to bound memory) until the bracket is narrower than 1e-14 relative to min(p, 1 - p) or a few
ulps: ~14 significant digits, inside the 1e-12 asked for. Checked against scipy's ``beta.ppf``
and ``binomtest(...).proportion_ci(method="exact")`` to 1e-9 in tests/stats/test_intervals.py
(n up to 10^5); the largest difference measured for n <= 1000 is ~1e-15. Cost per bound: 8-15
vectorised steps over n - m + 1 terms.

Each bound is returned rounded to PUBLISHED_DIGITS (12) significant digits: numpy's vectorised log and
exp pick SIMD code by CPU (AVX-512 or AVX2), so the last one or two ulps of a bound differ between
machines, and the metric files that hold it must be the same bytes on every machine. Rounding to 12
digits keeps what the method guarantees and drops what it does not.
"""

from __future__ import annotations

import math
import operator
from statistics import NormalDist

import numpy as np

from mnemetric.errors import ConfigError, InputError

BISECTION_RTOL = 1e-14
SECTION_POINTS = 63
SECTION_ELEMENTS = 1 << 18
MAX_SECTIONS = 400
EXACT_COMB_MAX_LOG = 40_000.0
"""math.comb(n, m) costs ~50 ms at this size (e.g. n = 50,000, m = n/2); beyond it, lgamma."""


def check_level(level: float, key: str = "level") -> float:
    """``level`` as a float in the open interval (0, 1); ConfigError otherwise."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ConfigError(key, f"expected a confidence level strictly between 0 and 1, got {level!r}",
                          fix="use e.g. 0.95")
    return float(level)


def _counts(k: int, n: int, source: str) -> tuple[int, int]:
    """Validate the counts: integers with 0 <= k <= n."""
    record = f"k={k!r}, n={n!r}"
    values = []
    for name, value in (("k", k), ("n", n)):
        try:
            if isinstance(value, bool):
                raise TypeError
            values.append(operator.index(value))
        except TypeError:
            raise InputError(source, record, name, f"expected an integer count, got {value!r}") from None
    k_int, n_int = values
    if n_int < 0:
        raise InputError(source, record, "n", f"expected n >= 0, got {n_int}")
    if not 0 <= k_int <= n_int:
        raise InputError(source, record, "k", f"expected 0 <= k <= n, got k={k_int}, n={n_int}")
    return k_int, n_int


def normal_quantile(level: float) -> float:
    """z = Phi^-1((1 + level) / 2): the two-sided normal critical value for ``level``."""
    return NormalDist().inv_cdf((1 + check_level(level)) / 2)


def wilson(k: int, n: int, level: float = 0.95, *, source: str = "<counts>") -> tuple[float, float] | None:
    """Wilson score interval (low, high) for k successes in n trials; None for n = 0.

    Formula and edge rules in the module docstring (Wilson 1927; Newcombe 1998 method 3,
    without continuity correction). Bounds are clipped to [0, 1].
    """
    k, n = _counts(k, n, source)
    z = normal_quantile(level)
    if n == 0:
        return None
    z2 = z * z
    centre = (k + z2 / 2) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def clopper_pearson(k: int, n: int, level: float = 0.95, *, source: str = "<counts>") -> tuple[float, float] | None:
    """Clopper-Pearson exact interval (low, high) for k successes in n trials; None for n = 0.

    low solves P[X >= k | p] = alpha/2, high solves P[X <= k | p] = alpha/2 (module docstring:
    method, edge rules and accuracy).
    """
    k, n = _counts(k, n, source)
    alpha = 1 - check_level(level)
    if n == 0:
        return None
    low = 0.0 if k == 0 else _published(_solve_tail(k, n, alpha / 2, upper=False))
    high = 1.0 if k == n else _published(_solve_tail(n - k, n, alpha / 2, upper=True))
    return low, high


PUBLISHED_DIGITS = 12
"""Significant digits of a Clopper-Pearson bound (module docstring: the same bytes on every CPU)."""


def _published(bound: float) -> float:
    """``bound`` rounded to PUBLISHED_DIGITS significant digits."""
    return float(f"{bound:.{PUBLISHED_DIGITS}g}")


def _log_upper_tail_terms(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(j, log C(n, j)) for j = m..n: log C(n, m) first (from the exact integer unless that has
    more than EXACT_COMB_MAX_LOG nats, then lgamma), then the log ratios
    log C(n, j+1) - log C(n, j) = log(n - j) - log(j + 1), accumulated."""
    first = math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1)
    if first <= EXACT_COMB_MAX_LOG:
        first = math.log(math.comb(n, m))
    j = np.arange(m, n + 1, dtype=np.float64)
    steps = np.log(n - j[:-1]) - np.log(j[:-1] + 1)
    return j, first + np.concatenate(([0.0], np.cumsum(steps)))


def _log_tails(j: np.ndarray, log_comb: np.ndarray, n: int, p: np.ndarray, upper: bool) -> np.ndarray:
    """log P[Y >= m | n, q] for each p, by log-sum-exp; q = p (lower bound) or q = 1 - p (upper
    bound: P[X <= k | p] = P[Y >= n - k | 1 - p] with Y = n - X), logs taken without forming 1 - p."""
    log_p, log_1mp = np.log(p)[:, None], np.log1p(-p)[:, None]
    log_q, log_1mq = (log_1mp, log_p) if upper else (log_p, log_1mp)
    terms = log_comb[None, :] + log_q * j[None, :] + log_1mq * (n - j)[None, :]
    top = terms.max(axis=1)
    return top + np.log(np.exp(terms - top[:, None]).sum(axis=1))


def _solve_tail(m: int, n: int, tail: float, *, upper: bool) -> float:
    """The p in (0, 1) with P[Y >= m | n, q] = tail (1 <= m <= n), q = p or 1 - p (see _log_tails).

    Multisection, i.e. bisection with ``points`` interior points per step: the tail is evaluated at
    all of them at once (it is monotone in p: increasing for q = p, decreasing for q = 1 - p) and
    the bracket shrinks to the two neighbours of the crossing, a factor points + 1 per step.
    """
    j, log_comb = _log_upper_tail_terms(m, n)
    target = math.log(tail)
    points = max(1, min(SECTION_POINTS, SECTION_ELEMENTS // j.size))
    lo, hi = 0.0, 1.0
    for _ in range(MAX_SECTIONS):
        mid = (lo + hi) / 2
        if hi - lo <= BISECTION_RTOL * min(mid, 1.0 - mid) or hi - lo <= 4 * math.ulp(hi):
            break
        grid = lo + (hi - lo) * np.arange(1, points + 1) / (points + 1)
        logs = _log_tails(j, log_comb, n, grid, upper)
        past = logs <= target if upper else logs >= target   # true from the crossing on
        first = int(np.argmax(past)) if past.any() else points
        lo, hi = (float(grid[first - 1]) if first > 0 else lo), (float(grid[first]) if first < points else hi)
    return (lo + hi) / 2
