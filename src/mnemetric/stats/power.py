"""Power of a paired comparison of two runs on n binary items: the minimal detectable difference.

Generic statistics (no benchmark knowledge), a Mnemetric addition. Two runs A and B answer the
same n items; p_10 = P[A right, B wrong], p_01 = P[A wrong, B right]. The accuracy difference
is delta = p_B - p_A = p_01 - p_10 and the discordance rate is psi = p_01 + p_10 (so
|delta| <= psi).

Formula (Connor 1987, "Sample size for testing differences in proportions for the paired-sample
design", Biometrics 43(1):207-211, p. 209: the normal approximation to McNemar's test). The
two-sided level-alpha test detects delta with power 1 - beta when::

    n = ( z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2) )^2 / delta^2

(the far tail, Phi((-delta sqrt(n) - z sqrt(psi)) / sqrt(psi - delta^2)), is neglected, as
there). Solving this for delta with s = sqrt(n), z_a = z_{1-alpha/2}, z_b = z_{1-beta} (the
positive root of (s^2 + z_b^2) delta^2 - 2 s z_a sqrt(psi) delta + (z_a^2 - z_b^2) psi = 0)::

    MDD = sqrt(psi) * ( s z_a + z_b sqrt(s^2 - z_a^2 + z_b^2) ) / (s^2 + z_b^2)

valid for n >= z_a^2 and power >= 1/2. It is None (nothing is detectable) when n < z_a^2 or
when MDD > psi (a difference larger than the discordance rate is impossible).

Assumption about the discordance rate (explicit, and recorded with every result): unless the
caller gives ``discordance``, psi = 2 p (1 - p), the rate of two runs of accuracy p whose
per-item outcomes are independent. Runs of related systems usually fail on the same items
(positively correlated outcomes, smaller psi), so this default overstates the MDD: it is the
conservative choice when the real discordance is unknown. Measure it from two real runs
(psi = (a_only + b_only) / n) and pass it when you have them.

The normal approximation is for the asymptotic McNemar z-test (simulated power at the MDD:
0.80-0.82 for n = 30-500 at p = 0.6). The exact conditional test in ``paired.py`` (the one
``mnemetric compare`` runs and gates on) is conservative: its power at this MDD is 0.75-0.78.

Exact power of that test (:func:`exact_mcnemar_power`, what :func:`minimal_detectable_difference`
reports by default, ``method="exact"``), by exact enumeration: with p_01 = (psi + delta)/2,
p_10 = (psi - delta)/2, the discordant count is D ~ Binomial(n, psi) and, given D, the count
X = #{B right only} ~ Binomial(D, pi), pi = p_01 / psi. The level-alpha test rejects when
X <= k_D or X >= D - k_D, k_D the largest k with 2 P[Bin(D, 1/2) <= k] <= alpha, so::

    power(delta) = sum_D P[D] ( P[X <= k_D | D, pi] + P[X >= D - k_D | D, pi] )

(binomial terms in log space; D outside the 1e-18 tails of Binomial(n, psi) left out, an error
below 1e-15). The exact MDD is the smallest delta in (0, psi] with power >= the target, by
bisection to 1e-10 (power rises with delta); None if even delta = psi falls short. The exact
power is a step function of n and not monotone in it (the test's size jumps with k_D). Above
n = EXACT_MAX_N (2,000; ~2 s there) the normal approximation is used instead, labelled as such.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from mnemetric.errors import ConfigError, InputError
from mnemetric.stats.intervals import check_level

SOURCE = "Connor (1987) Biometrics 43:207-211, normal approximation to McNemar's test"
EXACT_SOURCE = "exact power of the exact two-sided McNemar test (binomial enumeration over discordant pairs)"
METHODS = ("exact", "normal")
EXACT_MAX_N = 2000
"""Above this n the exact enumeration takes seconds; "exact" then falls back to the normal
approximation, and the record says so (``method`` "normal")."""
INDEPENDENT = "2p(1-p): the two runs' per-item outcomes independent at accuracy p"


@dataclass(frozen=True)
class DetectableDifference:
    """The minimal detectable difference of a paired binary comparison and what it assumes."""

    mdd: float | None
    """Smallest |accuracy difference| detected with the given power; None if none is."""
    n: int
    p: float
    discordance: float
    """psi used in the formula."""
    discordance_rule: str
    """How psi was chosen (the default assumption or "given")."""
    alpha: float
    power: float
    method: str = "exact"
    """"exact" (the exact McNemar test's power, enumerated) or "normal" (Connor's approximation)."""

    @property
    def source(self) -> str:
        return EXACT_SOURCE if self.method == "exact" else SOURCE

    @property
    def assumption(self) -> str:
        """One sentence a metrics file can carry next to the number."""
        return (f"MDD at {self.power:.0%} power, two-sided alpha {self.alpha:g}, n {self.n}, assuming "
                f"discordance {self.discordance:.4g} ({self.discordance_rule}); {self.source}")

    def to_record(self) -> dict[str, Any]:
        return {"mdd": self.mdd, "n": self.n, "p": self.p, "discordance": self.discordance,
                "discordance_rule": self.discordance_rule, "alpha": self.alpha, "power": self.power,
                "method": self.source, "assumption": self.assumption}


def _check_unit(key: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(key, f"expected a number in [0, 1], got {value!r}")
    return float(value)


def _check_n(n: int) -> int:
    try:
        if isinstance(n, bool):
            raise TypeError
        count = operator.index(n)
    except TypeError:
        raise InputError("<counts>", f"n={n!r}", "n", f"expected an integer count, got {n!r}") from None
    if count < 0:
        raise InputError("<counts>", f"n={n!r}", "n", f"expected n >= 0, got {count}")
    return count


def _z_values(alpha: float, power: float) -> tuple[float, float]:
    """(z_{1-alpha/2}, z_{power}) after checking 0 < alpha < 1 and 1/2 <= power < 1."""
    check_level(alpha, "alpha")
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not 0.5 <= power < 1:
        raise ConfigError("power", f"expected 0.5 <= power < 1, got {power!r}", fix="use e.g. 0.80")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2), normal.inv_cdf(power)


def minimal_detectable_difference(n: int, p: float, alpha: float = 0.05, power: float = 0.80, *,
                                  discordance: float | None = None, method: str = "exact") -> DetectableDifference:
    """MDD of the two-sided paired test on n binary items (module docstring).

    ``p``: the runs' accuracy (e.g. the baseline's); ``discordance``: psi, by default 2p(1-p)
    (independent outcomes; see the module docstring for why that is conservative); ``method``:
    "exact" (the exact McNemar test's power) or "normal" (Connor 1987).
    """
    n = _check_n(n)
    p = _check_unit("p", p)
    z_a, z_b = _z_values(alpha, power)
    if method not in METHODS:
        raise ConfigError("method", f"unknown MDD method {method!r}", fix=f"one of: {', '.join(METHODS)}")
    psi = 2 * p * (1 - p) if discordance is None else _check_unit("discordance", discordance)
    rule = INDEPENDENT if discordance is None else "given"
    if method == "exact" and n <= EXACT_MAX_N:
        return DetectableDifference(_exact_mdd(n, psi, float(alpha), float(power)), n, p, psi, rule,
                                    float(alpha), float(power), "exact")
    mdd = None
    if psi > 0 and n >= z_a * z_a:
        s2 = float(n)
        value = math.sqrt(psi) * (math.sqrt(s2) * z_a + z_b * math.sqrt(s2 - z_a * z_a + z_b * z_b)) / (s2 + z_b * z_b)
        mdd = value if value <= psi else None
    return DetectableDifference(mdd, n, p, psi, rule, float(alpha), float(power), "normal")


def paired_power(n: int, diff: float, discordance: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired z-test (Connor 1987) to detect ``diff`` with discordance psi::

        Phi((|d| sqrt(n) - z sqrt(psi)) / sqrt(psi - d^2)) + Phi((-|d| sqrt(n) - z sqrt(psi)) / sqrt(psi - d^2))

    with z = z_{1-alpha/2}; both tails counted. Needs |diff| <= discordance; diff = 0 -> alpha.
    """
    n = _check_n(n)
    psi = _check_unit("discordance", discordance)
    d = abs(float(diff))
    if not d <= psi:
        raise ConfigError("diff", f"|diff| = {d} cannot exceed the discordance rate {psi}")
    z_a, _ = _z_values(alpha, 0.5)
    if d == 0 or n == 0:
        return float(alpha) if n else 0.0
    spread = math.sqrt(psi - d * d)
    if spread == 0:
        return 1.0
    normal = NormalDist()
    root_n, root_psi = math.sqrt(n), math.sqrt(psi)
    return normal.cdf((d * root_n - z_a * root_psi) / spread) + normal.cdf((-d * root_n - z_a * root_psi) / spread)


def _log_factorials(n: int) -> np.ndarray:
    """log j! for j = 0..n (cumulative sums of logs; relative error ~ n 1e-16)."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=np.float64)))))


def _log_pmf(d: np.ndarray, j: np.ndarray, p: float, lf: np.ndarray) -> np.ndarray:
    """log P[Bin(d, p) = j] elementwise (-inf where j > d or the term is impossible at p = 0 or 1)."""
    valid = j <= d
    jj, dd = np.where(valid, j, 0), np.where(valid, d, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = np.where(jj > 0, jj * math.log(p), 0.0) if p > 0 else np.where(jj > 0, -np.inf, 0.0)
        lq = np.where(dd - jj > 0, (dd - jj) * math.log1p(-p), 0.0) if p < 1 else np.where(dd - jj > 0, -np.inf, 0.0)
        out = lf[dd] - lf[jj] - lf[dd - jj] + lp + lq
    return np.where(valid, out, -np.inf)


class _Enumeration:
    """What the exact power at (n, psi, alpha) needs whatever delta: P[D] over the D kept, k_D."""

    def __init__(self, n: int, psi: float, alpha: float):
        lf = _log_factorials(n)
        all_d = np.arange(n + 1)
        log_pd = _log_pmf(np.full(n + 1, n), all_d, psi, lf)
        self.d = all_d[log_pd > math.log(1e-18)]
        self.weight = np.exp(log_pd[self.d])
        j = np.arange(int(self.d.max()) + 1 if self.d.size else 1)
        self.j, self.lf = j[None, :], lf
        half = np.exp(_log_pmf(self.d[:, None], self.j, 0.5, lf))
        below = 2 * np.cumsum(half, axis=1) <= alpha * (1 + 1e-12)
        self.k = np.where(below.any(axis=1), below.sum(axis=1) - 1, -1)   # cdf rises, so a prefix
        self.reject = (self.j <= self.k[:, None]) | ((self.j >= (self.d - self.k)[:, None]) & (self.k[:, None] >= 0))
        self.reject &= self.j <= self.d[:, None]

    def power(self, pi: float) -> float:
        pmf = np.exp(_log_pmf(self.d[:, None], self.j, pi, self.lf))
        return float(min(1.0, np.sum(self.weight * np.sum(np.where(self.reject, pmf, 0.0), axis=1))))


def exact_mcnemar_power(n: int, diff: float, discordance: float, alpha: float = 0.05) -> float:
    """Power of the exact two-sided level-alpha McNemar test (``paired.mcnemar_exact``) to detect
    ``diff`` = p_01 - p_10 with discordance psi = p_01 + p_10, by exact enumeration (module docstring)."""
    n = _check_n(n)
    psi = _check_unit("discordance", discordance)
    check_level(alpha, "alpha")
    d = abs(float(diff))
    if not d <= psi:
        raise ConfigError("diff", f"|diff| = {d} cannot exceed the discordance rate {psi}")
    if n == 0 or psi == 0:
        return 0.0
    return _Enumeration(n, psi, alpha).power(min(1.0, (psi + d) / (2 * psi)))


def _exact_mdd(n: int, psi: float, alpha: float, power: float) -> float | None:
    """Smallest delta in (0, psi] whose exact power reaches ``power`` (bisection); None if none does."""
    if n == 0 or psi == 0:
        return None
    table = _Enumeration(n, psi, alpha)
    if table.power(1.0) < power:
        return None
    lo, hi = 0.0, psi
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2
        if table.power(min(1.0, (psi + mid) / (2 * psi))) >= power:
            hi = mid
        else:
            lo = mid
    return hi
