"""Agreement between two raters on the same items: raw agreement and Cohen's kappa with an interval.

Generic: two equal-length sequences of labels (any hashable categories; judges give True/False).

* raw agreement ``p_o = (1/n) Σ_i [a_i = b_i]``;
* Cohen's kappa (Cohen 1960) ``κ = (p_o − p_e) / (1 − p_e)``, with chance agreement
  ``p_e = Σ_c p_{c·} p_{·c}`` from the two raters' margins;
* its standard error: the analytic large-sample SE of Fleiss, Cohen & Everitt (1969, Psychological
  Bulletin 72(5):323–327), the delta-method variance of κ under multinomial sampling (not the
  null-hypothesis SE)::

      var(κ) = [ Σ_c p_cc (1 − (p_{c·} + p_{·c})(1 − κ))²
                 + (1 − κ)² Σ_{c≠d} p_cd (p_{·c} + p_{d·})²
                 − (κ − p_e (1 − κ))² ] / (n (1 − p_e)²)

* the interval: Wald ``κ ± z·SE`` (z = 1.959964 for 95%), clipped to [−1, 1].

Degenerate cases are stated, never hidden: with one category only (``p_e = 1``) κ is undefined
(``None``); when the SE is 0 (e.g. perfect agreement) there is no interval (``None``) — a Wald
interval would be the point [κ, κ]. Small-n caveat: the asymptotic SE is optimistic for n below
a few dozen; the method string says which interval was made.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054
METHOD = "Wald interval from the asymptotic SE of Fleiss, Cohen & Everitt (1969), clipped to [-1, 1]"


@dataclass(frozen=True)
class Agreement:
    """Agreement of two raters on ``n`` items."""

    n: int
    agreement: float | None
    """Raw agreement p_o (None when n = 0)."""
    kappa: float | None
    """Cohen's kappa (None when n = 0 or only one category occurs: p_e = 1)."""
    se: float | None
    low: float | None
    high: float | None
    method: str = METHOD

    def to_record(self) -> dict[str, Any]:
        ci = None if self.low is None or self.high is None else {"low": self.low, "high": self.high,
                                                                "method": self.method}
        return {"n": self.n, "agreement": self.agreement, "kappa": self.kappa, "kappa_se": self.se, "kappa_ci95": ci}


def _cells(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, list[Hashable], dict[tuple, float],
                                                                   dict[Hashable, float], dict[Hashable, float]]:
    if len(a) != len(b):
        raise ValueError(f"two raters must label the same items (got {len(a)} and {len(b)} labels)")
    n = len(a)
    cats = sorted(set(a) | set(b), key=repr)
    joint = {k: v / n for k, v in Counter(zip(a, b)).items()}
    rows = {c: sum(1 for x in a if x == c) / n for c in cats}
    cols = {c: sum(1 for y in b if y == c) / n for c in cats}
    return n, cats, joint, rows, cols


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two label sequences (module docstring); None if undefined."""
    return agreement(a, b).kappa


def kappa_se(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """The Fleiss–Cohen–Everitt (1969) asymptotic standard error of kappa; None if kappa is undefined."""
    return agreement(a, b).se


def agreement(a: Sequence[Hashable], b: Sequence[Hashable], z: float = Z95) -> Agreement:
    """Raw agreement, Cohen's kappa, its asymptotic SE and Wald interval (module docstring)."""
    if len(a) != len(b):
        raise ValueError(f"two raters must label the same items (got {len(a)} and {len(b)} labels)")
    if not a:
        return Agreement(0, None, None, None, None, None)
    n, cats, joint, rows, cols = _cells(a, b)
    po = sum(joint.get((c, c), 0.0) for c in cats)
    pe = sum(rows[c] * cols[c] for c in cats)
    if pe >= 1.0 - 1e-15:
        return Agreement(n, po, None, None, None, None)
    k = (po - pe) / (1 - pe)
    diag = sum(joint.get((c, c), 0.0) * (1 - (rows[c] + cols[c]) * (1 - k)) ** 2 for c in cats)
    off = (1 - k) ** 2 * sum(joint.get((c, d), 0.0) * (cols[c] + rows[d]) ** 2
                             for c in cats for d in cats if c != d)
    var = (diag + off - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    se = math.sqrt(max(var, 0.0))
    if se <= 1e-15:
        return Agreement(n, po, k, 0.0, None, None)
    return Agreement(n, po, k, se, max(-1.0, k - z * se), min(1.0, k + z * se))
