"""Retrieval metrics views (scoring/retrieval_report.py): headline, detail intervals, plot rows.

Hand-worked: three questions (one _abs) with session and turn metrics; means computed by hand.
"""

from __future__ import annotations

import json

import pytest

from mnemetric.longmemeval.scoring.retrieval_report import (
    BOOTSTRAP_METHOD,
    recall_curve,
    retrieval_headline,
    retrieval_metrics,
)
from mnemetric.longmemeval.scoring.scored_retrieval import QuestionFacts, ScoredRetrieval

METRICS = ("recall_any", "recall_all", "ndcg_any")


def level(values: dict[int, float]) -> dict[str, float]:
    return {f"{m}@{k}": v for m in METRICS for k, v in values.items()}


PER_QUESTION = {
        "q1": {"session": level({1: 0.0, 5: 1.0, 10: 1.0}), "turn": level({1: 0.0, 5: 0.0, 10: 1.0})},
        "q2": {"session": level({1: 1.0, 5: 1.0, 10: 1.0}), "turn": level({1: 0.0, 5: 1.0, 10: 1.0})},
        "q3": {"session": level({1: 0.0, 5: 0.0, 10: 0.0}), "turn": level({1: 0.0, 5: 0.0, 10: 0.0})},
        "q4_abs": {"session": level({1: 1.0, 5: 1.0, 10: 1.0}), "turn": level({1: 1.0, 5: 1.0, 10: 1.0})},
}
QUESTIONS = {
    "q1": QuestionFacts("multi-session", True),
    "q2": QuestionFacts("multi-session", True),
    "q3": QuestionFacts("knowledge-update", False),
    "q4_abs": QuestionFacts("knowledge-update", True),
}


def scored(per_question: dict, official: bool = True) -> ScoredRetrieval:
    return ScoredRetrieval.build("p", official, "turn", per_question, QUESTIONS)


SCORED = scored(PER_QUESTION)


def test_headline_is_the_eight_numbers_per_rule_without_intervals():
    h = retrieval_headline(retrieval_metrics(SCORED, 200, 0))
    assert list(h) == ["exclude_abs", "exclude_abs_and_no_user_target"]
    ex = h["exclude_abs"]  # q1, q2, q3
    assert ex["n"] == 3 and list(ex) == ["n", "session", "turn"]
    assert ex["session"] == {"recall_all@5": pytest.approx(2 / 3), "recall_all@10": pytest.approx(2 / 3),
                             "ndcg_any@5": pytest.approx(2 / 3), "ndcg_any@10": pytest.approx(2 / 3)}
    assert ex["turn"]["recall_all@5"] == pytest.approx(1 / 3) and ex["turn"]["recall_all@10"] == pytest.approx(2 / 3)
    nu = h["exclude_abs_and_no_user_target"]  # q1, q2
    assert nu["n"] == 2 and nu["turn"]["recall_all@5"] == 0.5
    assert "low" not in json.dumps(h) and "per_type" not in json.dumps(h)


def test_historical_names_are_the_headline_under_that_profile():
    per_q = {q: {lv: {f"{m}@{k}": v[f"recall_all@{k}"] for m in ("recall", "ndcg") for k in (1, 5, 10)}
                 for lv, v in block.items()} for q, block in PER_QUESTION.items()}
    h = retrieval_headline(retrieval_metrics(scored(per_q, official=False), 0, 0))
    assert list(h["exclude_abs"]["session"]) == ["recall@5", "recall@10", "ndcg@5", "ndcg@10"]


def test_detail_intervals_name_their_method_and_cover_the_mean():
    d = retrieval_metrics(SCORED, 500, 0)["exclude_abs"]
    ci = d["ci95"]["session"]["recall_all@5"]
    assert ci["method"] == BOOTSTRAP_METHOD and ci["low"] <= 2 / 3 <= ci["high"]
    # values 1, 1, 0: a resample mean is k/3; P[mean 0] = 1/27 = 3.7% > 2.5%,
    # so the 2.5% quantile is 0 and the 97.5% quantile is 1 (8/27 = 29.6% of resamples are all ones)
    assert (ci["low"], ci["high"]) == (0.0, 1.0)
    # a per-type block with constant values has a degenerate interval
    ku = d["per_type"]["knowledge-update"]["ci95"]["session"]["recall_all@5"]  # q3 only: 0
    assert (ku["low"], ku["high"]) == (0.0, 0.0)


def test_no_resamples_no_intervals():
    d = retrieval_metrics(SCORED, 0, 0)["exclude_abs"]
    assert d["ci95"]["session"]["recall_all@5"] is None


def test_recall_curve_rows_for_both_levels():
    rows = recall_curve(retrieval_metrics(SCORED, 0, 0)["exclude_abs"])
    assert rows == [
        {"granularity": "session", "k": 1, "recall": pytest.approx(1 / 3)},
        {"granularity": "session", "k": 5, "recall": pytest.approx(2 / 3)},
        {"granularity": "session", "k": 10, "recall": pytest.approx(2 / 3)},
        {"granularity": "turn", "k": 1, "recall": 0.0},
        {"granularity": "turn", "k": 5, "recall": pytest.approx(1 / 3)},
        {"granularity": "turn", "k": 10, "recall": pytest.approx(2 / 3)},
    ]
