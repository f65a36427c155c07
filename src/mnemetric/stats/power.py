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
0.80-0.82 for n = 30-500 at p = 0.6). The exact conditional test in ``paired.py`` is
conservative: its simulated power at this MDD is 0.76-0.78 for n = 30, 133 and 500 (p = 0.6).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from mnemetric.errors import ConfigError, InputError
from mnemetric.stats.intervals import check_level

SOURCE = "Connor (1987) Biometrics 43:207-211, normal approximation to McNemar's test"
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

    @property
    def assumption(self) -> str:
        """One sentence a metrics file can carry next to the number."""
        return (f"MDD at {self.power:.0%} power, two-sided alpha {self.alpha:g}, n {self.n}, assuming "
                f"discordance {self.discordance:.4g} ({self.discordance_rule}); {SOURCE}")

    def to_record(self) -> dict[str, Any]:
        return {"mdd": self.mdd, "n": self.n, "p": self.p, "discordance": self.discordance,
                "discordance_rule": self.discordance_rule, "alpha": self.alpha, "power": self.power,
                "method": SOURCE, "assumption": self.assumption}


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
                                  discordance: float | None = None) -> DetectableDifference:
    """MDD of a two-sided paired test on n binary items (Connor 1987; module docstring).

    ``p``: the runs' accuracy (e.g. the baseline's); ``discordance``: psi, by default 2p(1-p)
    (independent outcomes; see the module docstring for why that is conservative).
    """
    n = _check_n(n)
    p = _check_unit("p", p)
    z_a, z_b = _z_values(alpha, power)
    psi = 2 * p * (1 - p) if discordance is None else _check_unit("discordance", discordance)
    rule = INDEPENDENT if discordance is None else "given"
    mdd = None
    if psi > 0 and n >= z_a * z_a:
        s2 = float(n)
        value = math.sqrt(psi) * (math.sqrt(s2) * z_a + z_b * math.sqrt(s2 - z_a * z_a + z_b * z_b)) / (s2 + z_b * z_b)
        mdd = value if value <= psi else None
    return DetectableDifference(mdd, n, p, psi, rule, float(alpha), float(power))


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
