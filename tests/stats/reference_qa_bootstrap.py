"""The QA interval of the metrics files before mnemetric.stats existed (pooled percentile bootstrap over
questions of every statistic of point_estimates), kept here as the reference that
mnemetric.stats.pooled_bootstrap must reproduce; no module of src uses it any more."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from mnemetric.longmemeval.rules import ABSTENTION_MARK
from mnemetric.longmemeval.rules import UPSTREAM_PRINT_ORDER as QUESTION_TYPES
from mnemetric.longmemeval.scoring.qa import CI_LEVEL, Item, check_items

CI_CHUNK = 1000


def bootstrap_ci(labels: Iterable[Sequence[Any]], resamples: int, seed: int) -> dict[str, Any]:
    """Percentile 95% bootstrap intervals, pooled over questions (the earlier layout's intervals;
    metrics files now use :func:`qa_intervals`). Mnemetric addition; not in upstream.

    Method: draw ``resamples`` samples of all n questions with replacement (numpy
    ``default_rng(seed)``, so fixed seed → identical result), recompute every statistic of
    :func:`point_estimates` on each, and take the 2.5th and 97.5th percentiles (numpy's default
    linear interpolation). A replicate where a statistic is undefined (its bucket drew no question;
    for task_averaged: any type drew none) is left out for that statistic. No stratification by
    type: simple, and it reflects the uncertainty of the type mix too. Null when nothing is defined.
    """
    items = check_items(labels)
    result: dict[str, Any] = {"method": "percentile bootstrap over questions", "level": CI_LEVEL,
                              "resamples": resamples, "seed": seed}
    stats = _bootstrap_replicates(items, resamples, seed) if items and resamples > 0 else {}
    intervals = {key: _percentile_interval(values) for key, values in stats.items()}
    result["per_type"] = {t: intervals.get(t) for t in QUESTION_TYPES}
    for key in ("task_averaged", "overall", "abstention"):
        result[key] = intervals.get(key)
    return result


def _bootstrap_replicates(items: Sequence[Item], resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per statistic, its value on each bootstrap replicate (NaN where undefined)."""
    type_code = np.array([QUESTION_TYPES.index(t) for _, t, _ in items])
    label = np.array([lab for _, _, lab in items], dtype=bool)
    is_abs = np.array([ABSTENTION_MARK in q for q, _, _ in items], dtype=bool)
    rng = np.random.default_rng(seed)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, resamples, CI_CHUNK):
        idx = rng.integers(0, len(items), size=(min(CI_CHUNK, resamples - start), len(items)))
        parts.append(_replicate_stats(type_code[idx], label[idx], is_abs[idx]))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def _bucket_mean(mask: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Row-wise mean of ``label`` where ``mask``; NaN for rows with an empty mask."""
    count = mask.sum(axis=1)
    correct = (mask & label).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, correct / np.maximum(count, 1), np.nan)


def _replicate_stats(type_code: np.ndarray, label: np.ndarray, is_abs: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of each row (one bootstrap replicate) of the resampled arrays."""
    out = {t: _bucket_mean(type_code == k, label) for k, t in enumerate(QUESTION_TYPES)}
    out["task_averaged"] = np.mean(np.stack([out[t] for t in QUESTION_TYPES]), axis=0)  # NaN if any type is NaN
    out["overall"] = label.mean(axis=1)
    out["abstention"] = _bucket_mean(is_abs, label)
    return out


def _percentile_interval(values: np.ndarray) -> list[float] | None:
    """[lo, hi] percentile interval over the defined replicates, or None if none is defined."""
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return None
    tail = (1 - CI_LEVEL) / 2 * 100
    lo, hi = np.percentile(defined, [tail, 100 - tail])
    return [float(lo), float(hi)]
