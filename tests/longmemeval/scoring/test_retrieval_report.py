"""Retrieval metrics views (scoring/retrieval_report.py): headline, detail intervals, plot rows.

Hand-worked: three questions (one _abs) with session and turn metrics; means computed by hand.
"""

from __future__ import annotations

import json

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.scoring.retrieval_report import (
    BOOTSTRAP_METHOD,
    EXACT_METHOD,
    MeanBlock,
    read_retrieval_detail,
    recall_curve,
    retrieval_headline,
    retrieval_metric_files,
    retrieval_metrics,
)
from mnemetric.longmemeval.scoring.scored_retrieval import QuestionFacts, ScoredRetrieval
from mnemetric.official import OfficialEquivalence
from tests.support.edits import set_at

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
    claim = OfficialEquivalence(True) if official else OfficialEquivalence.of(["profile p is not upstream's"])
    return ScoredRetrieval.build("p", claim, "turn", per_question, QUESTIONS)


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
    # values 1, 1, 0 are 0/1: a proportion 2 of 3, so the exact Clopper-Pearson interval (scipy's
    # binomtest(2, 3).proportion_ci(method="exact") = [0.094299, 0.991596])
    assert ci["method"] == EXACT_METHOD and ci["low"] <= 2 / 3 <= ci["high"]
    assert (ci["low"], ci["high"]) == (pytest.approx(0.0942993240, abs=1e-9), pytest.approx(0.9915962413, abs=1e-9))
    # a per-type block with constant values: 0 of 1, not the bootstrap's degenerate [0, 0]
    ku = d["per_type"]["knowledge-update"]["ci95"]["session"]["recall_all@5"]  # q3 only: 0
    assert (ku["low"], ku["high"]) == (0.0, pytest.approx(0.975))
    # values that are not all 0/1 keep the percentile bootstrap: 0.5, 0.5, 0.0 -> resample means k/6
    # for k even; P[0] = 1/27 > 2.5% and P[0.5] = 8/27 > 2.5%, so [0, 0.5]
    from mnemetric.longmemeval.scoring.retrieval_report import _interval

    boot = _interval([0.5, 0.5, 0.0], 500, 0)
    assert boot["method"] == BOOTSTRAP_METHOD and (boot["low"], boot["high"]) == (0.0, 0.5)


def test_no_resamples_no_bootstrap_intervals():
    from mnemetric.longmemeval.scoring.retrieval_report import _interval

    d = retrieval_metrics(SCORED, 0, 0)["exclude_abs"]
    assert d["ci95"]["session"]["recall_all@5"]["method"] == EXACT_METHOD   # exact: no resamples needed
    assert _interval([0.5, 0.25], 0, 0) is None


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


# ------------------------------------------------------------------ reading the detail back

BLOCK = {"rule": "every question except _abs ones", "n": 1,
         "session": {"recall_all@5": 1.0, "ndcg_any@5": None},
         "ci95": {"session": {"recall_all@5": {"low": 1.0, "high": 1.0, "method": "boot"}, "ndcg_any@5": None}},
         "excluded": 1,
         "per_type": {"multi-session": {"n": 1, "session": {"recall_all@5": 1.0, "ndcg_any@5": None},
                                        "ci95": {"session": {"recall_all@5": None, "ndcg_any@5": None}}},
                      "knowledge-update": {"n": 0}}}
DETAIL = {"profile": "longmemeval-session-upstream-v1", "official_equivalence": {"value": True, "reasons": []}, "memory": "bm25",
          "variant": None, "suite": "full", "memory_fingerprint": None, "granularity": "session",
          "bootstrap": {"resamples": 10, "seed": 0, "level": 0.95, "note": "n"},
          "exclude_abs": BLOCK, "exclude_abs_and_no_user_target": {**BLOCK, "rule": "also no user target"}}


def write(tmp_path, doc) -> str:
    path = tmp_path / "detail" / "retrieval.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def test_hand_written_detail_reads_into_typed_blocks_and_back(tmp_path):
    d = read_retrieval_detail(write(tmp_path, DETAIL))
    assert (d.memory, d.variant, d.memory_fingerprint, d.scored) == ("bm25", None, None, None)
    ex = d.exclude_abs
    assert (ex.mean.n, ex.excluded, ex.mean.means["session"]["recall_all@5"]) == (1, 1, 1.0)
    assert ex.mean.ci95["session"]["recall_all@5"] == {"low": 1.0, "high": 1.0, "method": "boot"}
    assert ex.per_type["knowledge-update"] == MeanBlock(0, {}, None)
    assert d.exclude_abs_and_no_user_target.rule == "also no user target"
    assert json.dumps(d.to_record()) == json.dumps(DETAIL)


@pytest.mark.parametrize("per_question", [False, True])
def test_written_files_read_back_byte_identical(tmp_path, per_question):
    files = retrieval_metric_files(SCORED, memory="m", variant="s", suite="full", memory_fingerprint="ab",
                                   resamples=50, seed=1, per_question=per_question)
    d = read_retrieval_detail(write(tmp_path, files.detail))
    assert json.dumps(d.to_record()) == json.dumps(files.detail)
    assert (d.scored == SCORED) is per_question  # the per-question part, with both averages, comes back too
    assert files.scored is SCORED


def test_a_file_holding_per_question_values_rebuilds_the_scored_result(tmp_path):
    files = retrieval_metric_files(SCORED, memory=None, variant=None, suite=None, memory_fingerprint=None,
                                   resamples=0, seed=0, per_question=True)
    d = read_retrieval_detail(write(tmp_path, files.detail))
    assert d.scored.per_question["q3"]["turn"]["recall_all@10"] == 0.0
    assert d.scored.questions["q3"] == QuestionFacts("knowledge-update", False)


def broken(path: tuple, value) -> dict:
    return set_at(json.loads(json.dumps(DETAIL)), path, value)


@pytest.mark.parametrize("path, value, field", [
    (("official_equivalence",), "true", "official_equivalence"),
    (("memory_fingerprint",), KeyError, "memory_fingerprint"),
    (("granularity",), 5, "granularity"),
    (("bootstrap", "seed"), KeyError, "bootstrap"),
    (("exclude_abs", "n"), "1", "exclude_abs.n"),
    (("exclude_abs", "rule"), None, "exclude_abs.rule"),
    (("exclude_abs", "session", "recall_all@5"), "high", "exclude_abs.session.recall_all@5"),
    (("exclude_abs", "ci95", "session", "recall_all@5"), {"low": 0.1}, "exclude_abs.ci95.session.recall_all@5"),
    (("exclude_abs_and_no_user_target", "per_type", "multi-session", "n"), -2,
     "exclude_abs_and_no_user_target.per_type.multi-session.n"),
    (("exclude_abs_and_no_user_target",), KeyError, "exclude_abs_and_no_user_target"),
])
def test_bad_detail_names_file_and_field(tmp_path, path, value, field):
    file = write(tmp_path, broken(path, value))
    with pytest.raises(InputError) as info:
        read_retrieval_detail(file)
    assert (info.value.problem.file, info.value.problem.field) == (file, field), str(info.value)


def test_missing_or_unreadable_detail_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_retrieval_detail(tmp_path / "gone.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        read_retrieval_detail(bad)
