"""Paired comparison of two runs on the same items: exact McNemar test and a paired bootstrap.

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

The difference and its interval come from :func:`mnemetric.stats.bootstrap.paired_bootstrap_diff`
(diff = statistic(b) - statistic(a): positive means B is higher).
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
    """Paired percentile bootstrap interval of ``diff`` at ``level``."""
    level: float
    resampling: str
    resamples: int
    seed: int
    p_value: float | None
    """Exact McNemar p-value (binary outcomes, "micro" only), else None."""
    a_only: int | None
    b_only: int | None
    """Discordant counts (binary outcomes), else None."""

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)

    def to_record(self) -> dict[str, Any]:
        return {"n": self.n, "statistic": self.statistic, "a_mean": self.a_mean, "b_mean": self.b_mean,
                "diff": self.diff, "low": self.low, "high": self.high, "level": self.level,
                "resampling": self.resampling, "resamples": self.resamples, "seed": self.seed,
                "p_value": self.p_value, "test": None if self.p_value is None else "mcnemar exact, two-sided",
                "a_only": self.a_only, "b_only": self.b_only}

    @classmethod
    def from_record(cls, raw: Mapping[str, Any], *, file: str, line: int | str) -> PairedComparison:
        """Read back a :meth:`to_record` dict; a missing or mistyped field raises InputError."""
        record = f"line {line}" if isinstance(line, int) else line
        opt = (float, None)
        fields = {"n": int, "statistic": str, "a_mean": opt, "b_mean": opt, "diff": opt, "low": opt, "high": opt,
                  "level": float, "resampling": str, "resamples": int, "seed": int, "p_value": opt,
                  "a_only": (int, None), "b_only": (int, None)}
        return cls(**_read_fields(raw, fields, file, record))


def compare_paired(a: Sequence[float], b: Sequence[float], strata: Sequence[Hashable] | None = None,
                   statistic: str = "micro", resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                   labels: Sequence[Hashable] | None = None, source: str = "<paired values>") -> PairedComparison:
    """Means, paired bootstrap interval of b - a, and (for 0/1 outcomes, "micro") the exact McNemar p.

    Arguments as :func:`~mnemetric.stats.bootstrap.paired_bootstrap_diff`; the means are the
    chosen statistic on each run (for "macro", the mean of stratum means).
    """
    diff = paired_bootstrap_diff(a, b, strata, statistic, resamples, seed, level, labels=labels, source=source)
    a_mean = _statistic_of(a, strata, statistic, labels, source)
    b_mean = _statistic_of(b, strata, statistic, labels, source)
    binary = _binary(a, "a", source) is not None and _binary(b, "b", source) is not None
    counts = discordant(a, b, source=source) if binary and diff.n else None
    p_value = mcnemar_exact(*counts) if counts is not None and statistic == "micro" else None
    return PairedComparison(diff.n, statistic, a_mean, b_mean, diff.point, diff.low, diff.high, diff.level,
                            diff.resampling, resamples, seed, p_value,
                            counts.a_only if counts else None, counts.b_only if counts else None)


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
