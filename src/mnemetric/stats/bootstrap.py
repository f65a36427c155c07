"""One bootstrap engine: plain, pooled, stratified and paired percentile bootstraps of a mean.

Generic statistics (no benchmark knowledge), a Mnemetric addition: upstream LongMemEval reports
no intervals. Callers pass one float (or 0/1) value per item and, where needed, one stratum
label per item (any mutually comparable labels, e.g. strings) and optionally ``labels``, the
declared strata in order (default: the distinct labels, sorted).

Statistics (``STATISTICS``), for values x_1..x_n with stratum labels s_1..s_n:

* ``"micro"``: mean(x) = (1/n) sum_i x_i;
* ``"macro"``: (1/K) sum_s mean{x_i : s_i = s}, the unweighted mean of the K stratum means (a
  task-averaged accuracy), summed in label order. Undefined (NaN) where some stratum holds no
  item: on a pooled replicate that drew none of it, or everywhere if a declared stratum is empty.

Resampling schemes (each replicate is a set of n item indices):

* pooled: n indices drawn with replacement from all n items, ignoring strata;
* stratified: for each stratum of size n_s, n_s indices drawn with replacement from that
  stratum's items only, so every replicate keeps every stratum size (never an empty stratum);
* paired: the same indices pick both runs' values, so the per-item pairing (and the correlation
  between the two runs) is kept; pooled when no strata are given, stratified otherwise.

Interval: the percentile interval over the replicates, i.e. the (1 - level)/2 and (1 + level)/2
quantiles of the replicate statistics (numpy's default linear interpolation); replicates where the
statistic is undefined are left out and counted (``undefined``); if none is defined there is no
interval (None, never NaN).

Random numbers: pooled draws come from ``numpy.random.Generator(PCG64(seed))`` exactly as
the retrieval intervals of the metrics files drew them before this engine (so ``bootstrap_mean`` gives its numbers); a
stratified draw gives stratum number j (in label order) its own stream
``Generator(PCG64(SeedSequence(seed).spawn(K)[j]))``. Replicates are produced in chunks of at
most ``CHUNK_ELEMENTS`` indices; numpy's bounded-integer draws do not depend on how a draw is
split, so results depend only on (values, strata, labels, statistic, resamples, seed, level),
never on the chunk size. Memory is O(CHUNK_ELEMENTS + resamples).

Caveat, measured (tests/stats/test_bootstrap.py design, 2,000 simulated pairs of runs, 200
resamples): the paired percentile interval covers the true difference 0.909 of the time at n = 30,
~0.94 at n = 100, 0.949 at n = 500 (micro), and 0.91 (six strata of 7 items) / 0.93 (strata of
30, 60, 133) for the stratified macro difference, against a nominal 0.95. The percentile
bootstrap is too narrow for small n (its variance has divisor n, not n - 1, and 0/1 data are
discrete); for a single proportion use ``intervals.wilson`` / ``clopper_pearson``, and for a
paired 0/1 comparison use Tango's score interval (``score.py``, the primary interval of
``paired.compare_paired``) and let the exact McNemar p-value (``paired.py``) decide.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemetric.errors import ConfigError, InputError
from mnemetric.stats.intervals import check_level

CHUNK_ELEMENTS = 1 << 20
"""At most this many resampled indices are held at once (8 MiB of int64)."""


@dataclass(frozen=True)
class Groups:
    """Which stratum each column of a (rows, n) matrix of resampled values belongs to."""

    n_strata: int
    codes: np.ndarray | None = None
    """(rows, n) stratum code of every cell (any layout), or None."""
    bounds: tuple[int, ...] | None = None
    """Stratified layout: stratum j occupies columns bounds[j]:bounds[j+1] on every row."""


RowStatistic = Callable[[np.ndarray, Groups], np.ndarray]
"""(values (rows, n), groups) -> one value per row, NaN where undefined."""


def _micro(values: np.ndarray, groups: Groups) -> np.ndarray:
    """Row means."""
    return values.mean(axis=1)


def _macro(values: np.ndarray, groups: Groups) -> np.ndarray:
    """Row-wise unweighted mean of the K stratum means (summed in label order); NaN where a
    stratum is empty."""
    rows, k = values.shape[0], groups.n_strata
    if groups.bounds is not None:
        edges = groups.bounds
        if any(lo == hi for lo, hi in zip(edges[:-1], edges[1:])):
            return np.full(rows, np.nan)
        means = np.stack([values[:, lo:hi].sum(axis=1) / (hi - lo) for lo, hi in zip(edges[:-1], edges[1:])])
    else:
        cell = (np.arange(rows)[:, None] * k + groups.codes).ravel()
        sums = np.bincount(cell, weights=values.ravel(), minlength=rows * k).reshape(rows, k)
        counts = np.bincount(cell, minlength=rows * k).reshape(rows, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.ascontiguousarray(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).T)
    return means.mean(axis=0)  # (K, rows): stratum by stratum, NaN if any stratum is NaN


STATISTICS: dict[str, RowStatistic] = {"micro": _micro, "macro": _macro}


@dataclass(frozen=True)
class BootstrapResult:
    """A point statistic and its percentile bootstrap interval (see the module docstring)."""

    statistic: str
    """"micro" or "macro"."""
    resampling: str
    """"pooled" or "stratified" (paired results say "paired pooled" / "paired stratified")."""
    n: int
    """Number of items (pairs, for a paired bootstrap)."""
    n_strata: int
    """Number of strata: declared labels, else distinct labels (1 when none were given)."""
    point: float | None
    """The statistic on the data (for a paired bootstrap: b minus a); None when n = 0."""
    low: float | None
    high: float | None
    level: float
    resamples: int
    seed: int
    undefined: int
    """Replicates left out because the statistic was undefined on them (an empty stratum)."""

    @property
    def interval(self) -> tuple[float, float] | None:
        """(low, high), or None when there is no interval."""
        return None if self.low is None or self.high is None else (self.low, self.high)

    def to_record(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "resampling": self.resampling, "n": self.n,
                "n_strata": self.n_strata, "point": self.point, "low": self.low, "high": self.high,
                "level": self.level, "resamples": self.resamples, "seed": self.seed,
                "undefined": self.undefined, "method": "percentile bootstrap"}

    @classmethod
    def from_record(cls, raw: Mapping[str, Any], *, file: str, line: int | str) -> BootstrapResult:
        """Read back a :meth:`to_record` dict; a missing or mistyped field raises InputError."""
        record = f"line {line}" if isinstance(line, int) else line
        fields = {"statistic": str, "resampling": str, "n": int, "n_strata": int, "point": (float, None),
                  "low": (float, None), "high": (float, None), "level": float, "resamples": int,
                  "seed": int, "undefined": int}
        return cls(**_read_fields(raw, fields, file, record))


def _read_fields(raw: Any, fields: Mapping[str, Any], file: str, record: str) -> dict[str, Any]:
    """Typed fields of a record: int, str, float (ints accepted) or (float, None) = optional."""
    if not isinstance(raw, Mapping):
        raise InputError(file, record, "<record>", f"expected an object, got {type(raw).__name__}")
    out: dict[str, Any] = {}
    for name, kind in fields.items():
        if name not in raw:
            raise InputError(file, record, name, "missing")
        value = raw[name]
        optional = isinstance(kind, tuple)
        base = kind[0] if optional else kind
        if optional and value is None:
            out[name] = None
        elif base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
        elif base is not float and isinstance(value, base) and not isinstance(value, bool):
            out[name] = value
        else:
            raise InputError(file, record, name, f"expected {base.__name__}{' or null' if optional else ''}, got {value!r}")
    return out


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def as_values(values: Sequence[float], field: str, source: str) -> np.ndarray:
    """A flat float64 array of finite numbers (bools count as 0/1); InputError naming the index."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(source, f"shape {arr.shape}", field, "expected a flat sequence, one value per item")
    if arr.dtype.kind not in "biuf":
        for i, v in enumerate(values):
            if isinstance(v, str) or not isinstance(v, (int, float, np.integer, np.floating, np.bool_)):
                raise InputError(source, f"index {i}", field, f"expected a number, got {v!r}")
    out = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise InputError(source, f"index {bad[0]}", field, f"expected a finite number, got {values[bad[0]]!r}")
    return out


def strata_codes(strata: Sequence[Hashable], n: int, source: str,
                 labels: Sequence[Hashable] | None = None) -> tuple[np.ndarray, list[Hashable]]:
    """(code per item, stratum labels in order): code j means the item's label is labels[j].

    ``labels`` declares the strata and their order (a declared stratum may hold no item: "macro"
    is then undefined); by default the distinct labels, sorted. An item whose label is not
    declared raises InputError, as do duplicated declared labels.
    """
    items = list(strata)
    if len(items) != n:
        raise InputError(source, f"{len(items)} labels for {n} values", "strata", "expected one label per item")
    try:
        order = sorted(set(items)) if labels is None else list(labels)
        index = {label: j for j, label in enumerate(order)}
    except TypeError as exc:
        raise InputError(source, "all items", "strata", f"labels must be hashable and comparable: {exc}") from None
    if len(index) != len(order):
        raise InputError(source, "declared labels", "labels", f"duplicated label in {order!r}")
    unknown = next((i for i, x in enumerate(items) if x not in index), None)
    if unknown is not None:
        raise InputError(source, f"index {unknown}", "strata", f"label {items[unknown]!r} is not one of {order!r}")
    return np.fromiter((index[x] for x in items), dtype=np.int64, count=n), order


def _check_run(statistic: str, resamples: int, seed: int) -> None:
    if statistic not in STATISTICS:
        raise ConfigError("statistic", f"unknown statistic {statistic!r}; known: {sorted(STATISTICS)}")
    for key, value, low in (("resamples", resamples, 0), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(key, f"expected an integer >= {low}, got {value!r}",
                              fix="resamples 0 means no interval" if key == "resamples" else None)


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


def percentile_interval(values_per_replicate: Sequence[float] | np.ndarray,
                        level: float = 0.95) -> tuple[float, float] | None:
    """[(1 - level)/2, (1 + level)/2] quantiles (numpy linear interpolation) of the defined
    replicate values; NaN entries (undefined replicates) are left out; None if none is defined."""
    level = check_level(level)
    arr = np.asarray(values_per_replicate, dtype=np.float64)
    defined = arr[~np.isnan(arr)]
    if defined.size == 0:
        return None
    low, high = np.quantile(defined, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _index_chunks(n: int, codes: np.ndarray | None, n_strata: int, resamples: int, seed: int,
                  chunk_elements: int) -> Iterator[np.ndarray]:
    """Resampled item indices, (rows, n) per chunk: pooled if ``codes`` is None, else stratified
    (columns grouped by stratum, in label order). Streams as in the module docstring."""
    rows_per_chunk = max(1, chunk_elements // n)
    if codes is None:
        rngs = [np.random.Generator(np.random.PCG64(seed))]
        groups = [np.arange(n)]
    else:
        rngs = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(n_strata)]
        groups = [np.flatnonzero(codes == j) for j in range(n_strata)]
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        parts = [g[rng.integers(0, g.size, size=(rows, g.size))] for g, rng in zip(groups, rngs) if g.size]
        yield parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _replicates(columns: Sequence[np.ndarray], codes: np.ndarray, n_strata: int, stratified: bool,
                combine: Callable[[Sequence[np.ndarray], Groups], np.ndarray], resamples: int, seed: int,
                chunk_elements: int) -> np.ndarray:
    """``combine(resampled columns, groups)`` on every replicate, one value each."""
    bounds = tuple(np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=n_strata)))).tolist())
    out = []
    for idx in _index_chunks(codes.size, codes if stratified else None, n_strata, resamples, seed, chunk_elements):
        groups = Groups(n_strata, bounds=bounds) if stratified else Groups(n_strata, codes=codes[idx])
        out.append(combine([c[idx] for c in columns], groups))
    return np.concatenate(out) if out else np.empty(0)


def _run(columns: Sequence[np.ndarray], codes: np.ndarray, n_strata: int, *, statistic: str, stratified: bool,
         paired: bool, resamples: int, seed: int, level: float, chunk_elements: int) -> BootstrapResult:
    """Point statistic + percentile interval; ``paired`` -> statistic(b) - statistic(a)."""
    level = check_level(level)
    _check_run(statistic, resamples, seed)
    stat = STATISTICS[statistic]

    def combine(vals: Sequence[np.ndarray], groups: Groups) -> np.ndarray:
        return stat(vals[1], groups) - stat(vals[0], groups) if paired else stat(vals[0], groups)

    resampling = ("paired " if paired else "") + ("stratified" if stratified else "pooled")
    n = codes.size
    if n == 0:
        return BootstrapResult(statistic, resampling, 0, 0, None, None, None, level, resamples, seed, 0)
    point = float(combine([c[None, :] for c in columns], Groups(n_strata, codes=codes[None, :]))[0])
    reps = _replicates(columns, codes, n_strata, stratified, combine, resamples, seed, chunk_elements)
    interval = percentile_interval(reps, level) if resamples > 0 else None
    low, high = interval if interval else (None, None)
    return BootstrapResult(statistic, resampling, n, n_strata, None if np.isnan(point) else point, low, high,
                           level, resamples, seed, int(np.isnan(reps).sum()))


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def bootstrap_mean(values: Sequence[float], resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                   source: str = "<values>", chunk_elements: int = CHUNK_ELEMENTS) -> BootstrapResult:
    """Pooled percentile bootstrap of the mean of ``values`` (the micro statistic).

    Same draws and quantiles as the earlier retrieval interval (its plain form is the reference of
    tests/stats/test_bootstrap.py), so ``.interval`` equals its [low, high] for the same (values,
    resamples, seed, level); empty values -> point and interval None.
    """
    vals = as_values(values, "values", source)
    return _run([vals], np.zeros(vals.size, dtype=np.int64), 1, statistic="micro", stratified=False,
                paired=False, resamples=resamples, seed=seed, level=level, chunk_elements=chunk_elements)


def stratified_bootstrap(values: Sequence[float], strata: Sequence[Hashable], statistic: str = "macro",
                         resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                         labels: Sequence[Hashable] | None = None, source: str = "<values>",
                         chunk_elements: int = CHUNK_ELEMENTS) -> BootstrapResult:
    """Percentile bootstrap resampling within each stratum (stratum sizes kept on every replicate).

    ``statistic`` "macro" (mean of stratum means, e.g. a task-averaged accuracy or a retrieval mean
    averaged per type) or "micro" (mean over all items). No replicate is undefined unless a
    declared stratum holds no item (then "macro" is undefined everywhere: point and interval None).
    """
    vals = as_values(values, "values", source)
    codes, order = strata_codes(strata, vals.size, source, labels)
    return _run([vals], codes, len(order), statistic=statistic, stratified=True, paired=False,
                resamples=resamples, seed=seed, level=level, chunk_elements=chunk_elements)


def pooled_bootstrap(values: Sequence[float], strata: Sequence[Hashable], statistic: str = "macro",
                     resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                     labels: Sequence[Hashable] | None = None, source: str = "<values>",
                     chunk_elements: int = CHUNK_ELEMENTS) -> BootstrapResult:
    """Percentile bootstrap resampling all items together; strata only label items for "macro".

    This is the scheme of the earlier QA interval (its plain form, tests/stats/reference_qa_bootstrap.py,
    is reproduced exactly): the stratum mix varies between replicates and a replicate where some stratum drew
    nothing is undefined for "macro" (left out, counted in ``undefined``).
    """
    vals = as_values(values, "values", source)
    codes, order = strata_codes(strata, vals.size, source, labels)
    return _run([vals], codes, len(order), statistic=statistic, stratified=False, paired=False,
                resamples=resamples, seed=seed, level=level, chunk_elements=chunk_elements)


def paired_bootstrap_diff(a: Sequence[float], b: Sequence[float], strata: Sequence[Hashable] | None = None,
                          statistic: str = "micro", resamples: int = 1000, seed: int = 0, level: float = 0.95, *,
                          labels: Sequence[Hashable] | None = None, source: str = "<paired values>",
                          chunk_elements: int = CHUNK_ELEMENTS) -> BootstrapResult:
    """Paired percentile bootstrap of statistic(b) - statistic(a) over the same n items.

    ``a[i]`` and ``b[i]`` are the two runs' values on item i; each replicate uses the same indices
    for both, so the interval reflects the pairing. Without ``strata`` the resampling is pooled and
    only "micro" is allowed; with ``strata`` it is stratified (stratum sizes kept) and "micro" or
    "macro" may be used. ``point`` is the observed difference b - a (positive: b is higher).
    """
    va, vb = as_values(a, "a", source), as_values(b, "b", source)
    if va.size != vb.size:
        raise InputError(source, f"{va.size} vs {vb.size} values", "b",
                         "a and b must hold one value per item, in the same order")
    if strata is None:
        if statistic != "micro":
            raise ConfigError("statistic", f"{statistic!r} needs strata labels; without strata only 'micro' is defined")
        codes, n_strata = np.zeros(va.size, dtype=np.int64), 1
    else:
        codes, order = strata_codes(strata, va.size, source, labels)
        n_strata = len(order)
    return _run([va, vb], codes, n_strata, statistic=statistic, stratified=strata is not None, paired=True,
                resamples=resamples, seed=seed, level=level, chunk_elements=chunk_elements)
