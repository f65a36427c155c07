"""QA intervals (scoring/qa.py qa_intervals, qa_report.py headline/plot rows) against hand-computed cases.

Clopper-Pearson closed forms used below (alpha = 0.05): k = 0 -> [0, 1 - 0.025^(1/n)];
k = n -> [0.025^(1/n), 1]; 1 of 2 -> [1 - sqrt(0.975), sqrt(0.975)]; 1 of 3 -> low = 1 - 0.975^(1/3),
high = 0.9057007 (root of (1-p)^3 + 3p(1-p)^2 = 0.025, tables: 0.9057).
MDD (Connor 1987) worked by hand for n = 30, p = 0.5: psi = 0.5, z_a = 1.959964, z_b = 0.841621,
sqrt(psi) (sqrt(30) z_a + z_b sqrt(30 - z_a^2 + z_b^2)) / (30 + z_b^2) = 0.34764.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mnemetric.longmemeval.scoring.qa import (
    EXACT_METHOD,
    QUESTION_TYPES,
    STRATIFIED_METHOD,
    detectable_difference,
    qa_intervals,
)
from mnemetric.longmemeval.scoring.qa_report import per_type_plot_rows, qa_headline

SSU, SSP, SSA, MS, TR, KU = QUESTION_TYPES


def items_from(counts: dict[str, tuple[int, int]], abs_in: str | None = None) -> list[tuple[str, str, bool]]:
    """(k correct, n) per type -> items; the first question of ``abs_in`` is an abstention one."""
    out = []
    for t, (k, n) in counts.items():
        for i in range(n):
            qid = f"{t}-{i}" + ("_abs" if t == abs_in and i == 0 else "")
            out.append((qid, t, i < k))
    return out


def test_zero_of_six_is_not_certain():
    # the case: 0 of 6 correct; the percentile bootstrap said [0, 0]
    ci = qa_intervals(items_from({SSP: (0, 6)}), 0, 0)["per_type"][SSP]
    assert ci["low"] == 0.0 and ci["high"] == pytest.approx(1 - 0.025 ** (1 / 6), abs=1e-12)
    assert ci["high"] == pytest.approx(0.45926, abs=1e-5)
    assert ci["method"] == EXACT_METHOD and (ci["k"], ci["n"]) == (0, 6)


def test_exact_intervals_per_type_overall_and_abstention():
    counts = {SSU: (1, 3), SSP: (0, 1), SSA: (1, 1), MS: (2, 2), TR: (1, 2), KU: (1, 1)}
    ci = qa_intervals(items_from(counts, abs_in=SSU), 0, 0)
    per = ci["per_type"]
    assert per[SSU]["low"] == pytest.approx(1 - 0.975 ** (1 / 3), abs=1e-12)
    assert per[SSU]["high"] == pytest.approx(0.9057007, abs=1e-6)
    assert (per[SSP]["low"], per[SSP]["high"]) == (0.0, pytest.approx(0.975, abs=1e-12))
    assert (per[MS]["low"], per[MS]["high"]) == (pytest.approx(0.025 ** 0.5, abs=1e-12), 1.0)
    assert (per[TR]["low"], per[TR]["high"]) == (pytest.approx(1 - 0.975 ** 0.5), pytest.approx(0.975 ** 0.5))
    # overall 6 of 10; abstention: the one _abs question (SSU-0) is correct -> 1 of 1
    assert (ci["overall"]["k"], ci["overall"]["n"]) == (6, 10)
    assert ci["overall"]["low"] < 0.6 < ci["overall"]["high"]
    assert (ci["abstention"]["low"], ci["abstention"]["high"]) == (pytest.approx(0.025), 1.0)
    assert ci["task_averaged"] is None  # resamples = 0: no bootstrap
    json.dumps(ci, allow_nan=False)


def test_empty_type_has_no_interval_and_no_task_average_interval():
    ci = qa_intervals(items_from({SSU: (1, 2)}), 200, 0)
    assert ci["per_type"][SSP] is None and ci["mdd80"][SSP] is None
    assert ci["task_averaged"] is None and ci["abstention"] is None


def test_task_averaged_is_stratified_by_type():
    # five types constant (all right or all wrong: C = 1 + 0 + 1 + 1 + 0 = 3), TR is 1 of 2. Resampled
    # within types, only TR's mean moves: it is 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5% / 97.5% quantiles of the macro mean are (3 + 0) / 6 and (3 + 1) / 6 exactly.
    counts = {SSU: (3, 3), SSP: (0, 4), SSA: (2, 2), MS: (5, 5), TR: (1, 2), KU: (0, 3)}
    ci = qa_intervals(items_from(counts), 1000, 3)["task_averaged"]
    assert (ci["low"], ci["high"]) == (pytest.approx(3 / 6, abs=1e-12), pytest.approx(4 / 6, abs=1e-12))
    assert ci["method"] == STRATIFIED_METHOD and (ci["resamples"], ci["seed"]) == (1000, 3)


def test_task_averaged_matches_a_naive_stratified_bootstrap():
    counts = {SSU: (5, 8), SSP: (1, 6), SSA: (3, 6), MS: (2, 8), TR: (4, 8), KU: (6, 7)}
    items = items_from(counts)
    ci = qa_intervals(items, 4000, 0)["task_averaged"]
    rng = np.random.default_rng(12345)  # a different generator: agreement within Monte-Carlo noise
    reps = []
    for _ in range(4000):
        means = []
        for t in QUESTION_TYPES:
            labels = np.array([lab for _, qt, lab in items if qt == t], dtype=float)
            means.append(rng.choice(labels, size=labels.size, replace=True).mean())
        reps.append(sum(means) / 6)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    assert ci["low"] == pytest.approx(lo, abs=0.02) and ci["high"] == pytest.approx(hi, abs=0.02)


def test_minimal_detectable_difference_by_hand():
    mdd = detectable_difference([True] * 15 + [False] * 15)
    # the exact McNemar test's power (enumeration, checked in tests/stats/test_power.py); Connor's
    # normal approximation would say 0.34764, where the exact test has ~0.75 power, not 0.80
    assert mdd["mdd"] == pytest.approx(0.362310, abs=1e-5)
    assert "exact" in mdd["method"]
    assert mdd["n"] == 30 and mdd["power"] == 0.8 and mdd["alpha"] == 0.05
    assert "2p(1-p)" in mdd["assumption"] and mdd["p_rule"] == "observed accuracy"
    # n = 8 at p = 0.625: the formula gives 0.5818 > psi = 0.46875, so no difference is detectable
    assert detectable_difference([True] * 5 + [False] * 3)["mdd"] is None


def test_mdd_at_accuracy_zero_uses_p_one_half():
    mdd = detectable_difference([False] * 30)
    assert mdd["p"] == 0.5 and mdd["mdd"] == pytest.approx(0.362310, abs=1e-5)
    assert "p = 0.5" in mdd["p_rule"]


def detail_for(counts):
    from mnemetric.longmemeval.scoring.qa import qa_metrics

    items = items_from(counts, abs_in=SSU)
    m = qa_metrics(items, resamples=0)
    ci = qa_intervals(items, 100, 0)
    for t in QUESTION_TYPES:
        m["per_type"][t]["ci95"] = ci["per_type"][t]
    return m | {"official_equivalence": {"value": False, "reasons": ["r"]}}


def test_headline_holds_point_numbers_only_in_a_fixed_order():
    counts = {SSU: (1, 3), SSP: (0, 1), SSA: (1, 1), MS: (2, 2), TR: (1, 2), KU: (1, 1)}
    h = qa_headline(detail_for(counts))
    assert list(h) == ["official_equivalence", "overall", "task_averaged", "abstention", "per_type", "n"]
    assert list(h["per_type"]) == list(QUESTION_TYPES)
    assert h["per_type"][SSU] == pytest.approx(1 / 3) and h["overall"] == pytest.approx(0.6)
    assert h["abstention"] == 1.0 and h["n"] == 10
    flat = json.dumps(h)
    assert "low" not in flat and "ci95" not in flat


def test_plot_rows_carry_the_interval_and_method():
    counts = {SSU: (1, 3), SSP: (0, 1)}
    rows = per_type_plot_rows(detail_for(counts))
    assert [r["type"] for r in rows] == [SSU, SSP]  # empty types have no bar
    assert rows[1] == {"type": SSP, "accuracy": 0.0, "low": 0.0, "high": pytest.approx(0.975), "n": 1,
                       "method": EXACT_METHOD}
