"""Paired comparison of two runs on the same items: exact McNemar test, score interval, bootstrap.

Generic statistics (no benchmark knowledge), a Mnemetric addition (upstream LongMemEval compares
no runs). Two runs A and B score the same n items, a[i] and b[i] for item i (0/1 for accuracy).

Discordant counts (``discordant``), for 0/1 outcomes::

    a_only = #{i : a_i = 1, b_i = 0}        (McNemar's b)
    b_only = #{i : a_i = 0, b_i = 1}        (McNemar's c)

Exact McNemar test (McNemar 1947, Psychometrika 12:153-157; exact conditional form, e.g. Agresti,
Categorical Data Analysis, 3rd ed. 2013, sec. 11.1): under H0 (equal accuracies) the split of the
D = b + c discordant items is X ~ Binomial(D, 1/2), and the two-sided p-value is::

    p = min(1, 2 * P[X <= min(b, c)]) = min(1, sum_{i=0..min(b,c)} C(D, i) / 2^(D-1));  D = 0 -> 1.0

computed in exact integer arithmetic and rounded once to a float. The test is conditional on D
and conservative (its size is at most alpha). It compares micro accuracies only: strata are
ignored, so :func:`compare_paired` gives it only for the "micro" statistic.

For values that are not all 0/1 the same exact binomial test runs on the items where the runs
differ (b = #{a_i > b_i}, c = #{a_i < b_i}): the exact two-sided sign test, of which McNemar's is
the 0/1 case ("micro" only, as above).

The difference is diff = statistic(b) - statistic(a) (positive means B is higher). Its primary
interval (``low``, ``high``, named by ``interval_method``):

* 0/1 values, "micro": Tango's score interval from (b_only, a_only, n) (:mod:`.score`); never
  [0, 0], and its coverage holds at n = 30 where the bootstrap's does not (measured in
  tests/stats/test_simulation.py);
* 0/1 values, "macro" with strata: the per-stratum Tango intervals combined by MOVER (:mod:`.score`);
  None if a declared stratum is empty;
* other values: the paired percentile bootstrap.

The paired percentile bootstrap (:func:`mnemetric.stats.bootstrap.paired_bootstrap_diff`) is always
reported too, as ``bootstrap_low`` / ``bootstrap_high`` (secondary; None when ``resamples`` is 0).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from mnemetric.errors import InputError
from mnemetric.stats.bootstrap import STATISTICS, Groups, _read_fields, as_values, paired_bootstrap_diff, strata_codes
from mnemetric.stats.score import MOVER_METHOD, TANGO_METHOD, mover_mean, tango_interval

BOOTSTRAP_METHOD = "paired percentile bootstrap"
MCNEMAR_TEST = "mcnemar exact, two-sided"
SIGN_TEST = "sign test exact, two-sided"


class Discordant(NamedTuple):
    """The discordant cells of the paired 2x2 table."""

    a_only: int
    """Items where A is right (1) and B wrong (0): McNemar's b."""
    b_only: int
    """Items where B is right (1) and A wrong (0): McNemar's c."""


def mcnemar_exact(b: int, c: int, *, source: str = "<counts>") -> float:
    """Two-sided exact McNemar p-value min(1, 2 P[X <= min(b, c)]), X ~ Binomial(b + c, 1/2).

    ``b``, ``c``: the discordant counts (see :class:`Discordant`). b + c = 0 -> 1.0. Symmetric in
    (b, c). Worked example: b = 0, c = 5 -> 2 * (1/2)^5 = 0.0625.
    """
    counts = []
    for name, value in (("b", b), ("c", c)):
        try:
            if isinstance(value, bool):
                raise TypeError
            count = operator.index(value)
        except TypeError:
            raise InputError(source, f"b={b!r}, c={c!r}", name, f"expected an integer count, got {value!r}") from None
        if count < 0:
            raise InputError(source, f"b={b!r}, c={c!r}", name, f"expected a count >= 0, got {count}")
        counts.append(count)
    total, smaller = sum(counts), min(counts)
    if total == 0:
        return 1.0
    tail = sum(math.comb(total, i) for i in range(smaller + 1))
    return min(1.0, tail / 2 ** (total - 1))


def _binary(values: Sequence[Any], field: str, source: str) -> np.ndarray | None:
    """The values as a bool array if every one is 0/1 (or a bool), else None."""
    arr = as_values(values, field, source)
    return arr.astype(bool) if np.all((arr == 0) | (arr == 1)) else None


def discordant(a: Sequence[int | bool], b: Sequence[int | bool], *, source: str = "<paired values>") -> Discordant:
    """(a_only, b_only) for paired 0/1 outcomes; InputError naming the index of a non-0/1 value."""
    arrays = []
    for field, values in (("a", a), ("b", b)):
        arr = as_values(values, field, source)
        bad = np.flatnonzero((arr != 0) & (arr != 1))
        if bad.size:
            raise InputError(source, f"index {bad[0]}", field, f"expected 0/1 or true/false, got {values[bad[0]]!r}")
        arrays.append(arr.astype(bool))
    va, vb = arrays
    if va.size != vb.size:
        raise InputError(source, f"{va.size} vs {vb.size} values", "b",
                         "a and b must hold one value per item, in the same order")
    return Discordant(int(np.sum(va & ~vb)), int(np.sum(~va & vb)))


@dataclass(frozen=True)
class PairedComparison:
    """Run B against run A on the same n items."""

    n: int
    statistic: str
    """"micro" (mean over items) or "macro" (mean of stratum means)."""
    a_mean: float | None
    b_mean: float | None
    diff: float | None
    """b_mean - a_mean."""
    low: float | None
    high: float | None
    """Primary interval of ``diff`` at ``level`` (module docstring), made by ``interval_method``."""
    interval_method: str
    bootstrap_low: float | None
    bootstrap_high: float | None
    """Paired percentile bootstrap interval of ``diff`` at ``level`` (secondary)."""
    level: float
    resampling: str
    resamples: int
    seed: int
    p_value: float | None
    """"micro" only: exact McNemar p-value (0/1 outcomes), else the exact sign test's; None for "macro"."""
    test: str | None
    """Which test gave ``p_value``."""
    a_only: int | None
    b_only: int | None
    """Discordant counts (binary outcomes), else None."""

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)

    def to_record(self) -> dict[str, Any]:
        return {"n": self.n, "statistic": self.statistic, "a_mean": self.a_mean, "b_mean": self.b_mean,
                "diff": self.diff, "low": self.low, "high": self.high, "interval_method": self.interval_method,
                "bootstrap_low": self.bootstrap_low, "bootstrap_high": self.bootstrap_high, "level": self.level,
                "resampling": self.resampling, "resamples": self.resamples, "seed": self.seed,
                "p_value": self.p_value, "test": self.test, "a_only": self.a_only, "b_only": self.b_only}

    @classmethod
    def from_record(cls, raw: Mapping[str, Any], *, file: str, line: int | str) -> PairedComparison:
        """Read back a :meth:`to_record` dict; a missing or mistyped field raises InputError."""
        record = f"line {line}" if isinstance(line, int) else line
        opt = (float, None)
        fields = {"n": int, "statistic": str, "a_mean": opt, "b_mean": opt, "diff": opt, "low": opt, "high": opt,
                  "interval_method": str, "bootstrap_low": opt, "bootstrap_high": opt,
                  "level": float, "resampling": str, "resamples": int, "seed": int, "p_value": opt,
                  "test": (str, None), "a_only": (int, None), "b_only": (int, None)}
        return cls(**_read_fields(raw, fields, file, record))


def compare_paired(a: Sequence[float], b: Sequence[float], strata: Sequence[Hashable] | None = None,
                   statistic: str = "micro", resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                   labels: Sequence[Hashable] | None = None, source: str = "<paired values>") -> PairedComparison:
    """Means, primary and bootstrap intervals of b - a, and ("micro") the exact paired test's p.

    Arguments as :func:`~mnemetric.stats.bootstrap.paired_bootstrap_diff`; the means are the
    chosen statistic on each run (for "macro", the mean of stratum means). Which interval is
    primary and which test runs: the module docstring.
    """
    boot = paired_bootstrap_diff(a, b, strata, statistic, resamples, seed, level, labels=labels, source=source)
    a_mean = _statistic_of(a, strata, statistic, labels, source)
    b_mean = _statistic_of(b, strata, statistic, labels, source)
    binary = _binary(a, "a", source) is not None and _binary(b, "b", source) is not None
    counts = discordant(a, b, source=source) if binary and boot.n else None
    p_value = test = None
    if statistic == "micro" and boot.n:
        if counts is not None:
            p_value, test = mcnemar_exact(*counts), MCNEMAR_TEST
        else:
            va, vb = as_values(a, "a", source), as_values(b, "b", source)
            p_value, test = mcnemar_exact(int(np.sum(va > vb)), int(np.sum(va < vb))), SIGN_TEST
    low, high, method = boot.low, boot.high, BOOTSTRAP_METHOD
    if counts is not None and statistic == "micro":
        low, high = tango_interval(counts.b_only, counts.a_only, boot.n, level)
        method = TANGO_METHOD
    elif counts is not None and statistic == "macro":
        low, high = _mover(a, b, strata, labels, level, source)
        method = MOVER_METHOD
    return PairedComparison(boot.n, statistic, a_mean, b_mean, boot.point, low, high, method, boot.low, boot.high,
                            boot.level, boot.resampling, resamples, seed, p_value, test,
                            counts.a_only if counts else None, counts.b_only if counts else None)


def _mover(a: Sequence[float], b: Sequence[float], strata: Sequence[Hashable], labels: Sequence[Hashable] | None,
           level: float, source: str) -> tuple[float | None, float | None]:
    """MOVER interval of the mean of stratum differences from per-stratum Tango intervals (0/1 values);
    (None, None) if a declared stratum holds no item."""
    va, vb = as_values(a, "a", source), as_values(b, "b", source)
    codes, order = strata_codes(strata, va.size, source, labels)
    diffs, intervals = [], []
    for j in range(len(order)):
        sa, sb = va[codes == j].astype(bool), vb[codes == j].astype(bool)
        if sa.size == 0:
            return None, None
        x, y = int(np.sum(~sa & sb)), int(np.sum(sa & ~sb))
        diffs.append((x - y) / sa.size)
        intervals.append(tango_interval(x, y, sa.size, level))
    _, low, high = mover_mean(diffs, intervals)
    return low, high


def _statistic_of(values: Sequence[float], strata: Sequence[Hashable] | None, statistic: str,
                  labels: Sequence[Hashable] | None, source: str) -> float | None:
    """The statistic on one run's values (no resampling)."""
    vals = as_values(values, "values", source)
    if vals.size == 0:
        return None
    if strata is None:
        codes, n_strata = np.zeros(vals.size, dtype=np.int64), 1
    else:
        codes, order = strata_codes(strata, vals.size, source, labels)
        n_strata = len(order)
    value = float(STATISTICS[statistic](vals[None, :], Groups(n_strata, codes=codes[None, :]))[0])
    return None if math.isnan(value) else value
