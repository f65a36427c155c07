"""metrics/qa.json with failed questions: counted, named, in no number, and never official.

Worked example (hand-computed): four reference questions, q2 failed at the judge.

    q1      single-session-user   judged yes
    q2      single-session-user   FAILED (content is null)
    q3      multi-session         judged no
    q4_abs  multi-session         judged yes

Over the three judged ones: single-session-user 1/1 = 1.0 (n 1), multi-session 1/2 = 0.5 (n 2),
overall 2/3, abstention 1/1 (n 1); task_averaged null (four types have no question).
"""

from __future__ import annotations

import pytest

from mnemetric.longmemeval.hypotheses import JudgedHypothesis
from mnemetric.longmemeval.judgments import JudgeCall, JudgeParams, JudgeTrace
from mnemetric.errors import InputError
from mnemetric.longmemeval.judge.upstream_prompts import PROMPT_SET_SHA256, SHA256
from mnemetric.llm.failures import QuestionFailure
from mnemetric.llm.usage import UsageRecord
from mnemetric.longmemeval.scoring.qa_report import cost_block, judge_traces, qa_report

M = "gpt-4o-2024-08-06"
OK = {"temperature": 0, "max_tokens": 10, "n": 1}
TRACE = JudgeTrace("upstream-gpt-4o", JudgeCall(PROMPT_SET_SHA256, SHA256, M, JudgeParams(0, 10, 1),
                                                 "http://127.0.0.1:1/v1", "cd" * 32, "yes", 100, 1, None))
REF = {"q1": "single-session-user", "q2": "single-session-user", "q3": "multi-session", "q4_abs": "multi-session"}
FAILED = QuestionFailure("q2", "judge", "content is null", "ab" * 32, M, 2)


def judged(*labels: tuple[str, bool]) -> list[JudgedHypothesis]:
    return [JudgedHypothesis(q, M, label, "h", TRACE) for q, label in labels]


def report(lines: list[JudgedHypothesis], failures=(), **kw):
    return qa_report(lines, REF, judge="upstream-gpt-4o", traces=judge_traces([j.judge_trace for j in lines]),
                     resamples=0, seed=0, failures=list(failures), **kw)


def test_the_worked_example_covers_judged_questions_only():
    m = report(judged(("q1", True), ("q3", False), ("q4_abs", True)), [FAILED])
    ssu, ms = m["per_type"]["single-session-user"], m["per_type"]["multi-session"]
    assert (ssu["accuracy"], ssu["n"], ms["accuracy"], ms["n"]) == (1.0, 1, 0.5, 2)
    # Clopper-Pearson by hand: 1 of 1 -> [0.025, 1]; 1 of 2 -> [1 - sqrt(0.975), sqrt(0.975)]
    assert (ssu["ci95"]["low"], ssu["ci95"]["high"]) == (pytest.approx(0.025, abs=1e-12), 1.0)
    assert ms["ci95"]["low"] == pytest.approx(1 - 0.975 ** 0.5, abs=1e-12)
    assert ms["ci95"]["high"] == pytest.approx(0.975 ** 0.5, abs=1e-12)
    assert m["overall"] == 2 / 3 and m["n"] == 3 and m["task_averaged"] is None
    assert m["abstention"] == {"accuracy": 1.0, "n": 1}
    assert m["coverage"] == {"n_reference": 4, "n_judged": 3, "n_failed": 1, "missing": [],
                             "scope": "judged questions only; 1 failed question(s) are in no number"}
    assert m["failures"] == {"n": 1, "by_stage": {"judge": 1}, "by_reason": {"content is null": 1},
                             "question_ids": ["q2"]}


def test_a_failure_alone_makes_an_official_setup_unofficial():
    everything = report(judged(("q1", True), ("q2", True), ("q3", False), ("q4_abs", True)))
    assert everything["official_equivalence"] == {"value": True, "reasons": []}
    assert everything["failures"]["n"] == 0 and everything["coverage"]["n_failed"] == 0
    one_failed = report(judged(("q1", True), ("q3", False), ("q4_abs", True)), [FAILED])
    assert one_failed["official_equivalence"]["value"] is False
    assert one_failed["official_equivalence"]["reasons"] == [
        "1 question(s) failed (no usable model answer; in no number): q2"]


def test_reader_and_judge_failures_are_counted_by_stage_and_reason():
    reader = QuestionFailure("q3", "answer", "finish_reason 'content_filter'", "cd" * 32, "gpt-4o-mini", 2)
    m = report(judged(("q1", True), ("q4_abs", True)), [reader, FAILED])
    assert m["failures"]["by_stage"] == {"answer": 1, "judge": 1}
    assert m["failures"]["question_ids"] == ["q3", "q2"] and m["coverage"]["n_judged"] == 2
    ms = m["per_type"]["multi-session"]  # q4_abs only
    assert (ms["accuracy"], ms["n"], ms["ci95"]["low"], ms["ci95"]["high"]) == (1.0, 1, pytest.approx(0.025), 1.0)


def test_judged_plus_failed_must_be_the_reference():
    with pytest.raises(InputError, match="q2"):  # neither judged nor failed
        report(judged(("q1", True), ("q3", False), ("q4_abs", True)))
    with pytest.raises(InputError, match="both judged and failed"):
        report(judged(("q1", True), ("q2", True), ("q3", False), ("q4_abs", True)), [FAILED])
    with pytest.raises(InputError, match="not in the reference"):
        report(judged(("q1", True), ("q3", False), ("q4_abs", True)),
               [FAILED, QuestionFailure("q9", "judge", "no choices", None, M)])
    with pytest.raises(InputError, match="duplicate"):
        report(judged(("q1", True), ("q3", False), ("q4_abs", True)), [FAILED, FAILED])


def test_partial_scoring_still_names_the_failed():
    m = report(judged(("q1", True)), [FAILED], allow_partial=True)
    assert m["coverage"]["missing"] == ["q3", "q4_abs"] and m["coverage"]["n_failed"] == 1


def test_failure_records_round_trip_and_name_bad_fields():
    assert QuestionFailure.from_record(FAILED.to_record(), file="f", line=1) == FAILED
    with pytest.raises(InputError, match="line 3.*'stage'"):
        QuestionFailure.from_record(FAILED.to_record() | {"stage": "retrieve"}, file="f", line=3)
    with pytest.raises(InputError, match="'reason'"):
        QuestionFailure.from_record(FAILED.to_record() | {"reason": ""}, file="f", line=1)


def usage(responses: int, prompt: int, completion: int, usd: float, model: str) -> UsageRecord:
    block = {"responses": responses, "prompt_tokens": prompt, "completion_tokens": completion, "usd": usd}
    raw = block | {"unpriced_models": [], "per_model": {model: block | {"resolved_models": [model]}}}
    return UsageRecord.from_record(raw, file="usage.json")


def test_cost_is_the_work_per_stage_and_in_total():
    empty = {"responses": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0, "per_model": {}}
    none_used = UsageRecord.from_record(empty | {"unpriced_models": []}, file="retrieve-usage.json")
    cost = cost_block(none_used, usage(43, 4300, 430, 0.25, "gpt-4o-mini"), usage(43, 8600, 86, 0.5, M))
    assert cost["retrieve"] == empty
    assert cost["answer"]["responses"] == 43 and cost["judge"]["usd"] == 0.5
    assert {k: cost["total"][k] for k in ("responses", "prompt_tokens", "completion_tokens", "usd")} == \
        {"responses": 86, "prompt_tokens": 12900, "completion_tokens": 516, "usd": 0.75}
    assert cost["total"]["per_model"] == {
        "gpt-4o-mini": {"responses": 43, "prompt_tokens": 4300, "completion_tokens": 430, "usd": 0.25},
        M: {"responses": 43, "prompt_tokens": 8600, "completion_tokens": 86, "usd": 0.5}}
    assert "requests_sent" not in cost["total"] and "seconds" not in cost["total"]


def test_where_questions_failed_both_accuracies_are_reported_side_by_side():
    """The worked example again with q2 counted wrong: single-session-user 1/2, multi-session 1/2, overall 2/4."""
    from mnemetric.longmemeval.scoring.qa_detail import QADetail
    from mnemetric.longmemeval.scoring.qa_report import qa_headline

    m = report(judged(("q1", True), ("q3", False), ("q4_abs", True)), [FAILED])
    wrong = m["failed_as_wrong"]
    assert wrong["overall"] == 0.5 and wrong["n"] == 4 and wrong["task_averaged"] is None
    assert wrong["per_type"]["single-session-user"] == {"accuracy": 0.5, "n": 2}
    assert wrong["per_type"]["multi-session"] == {"accuracy": 0.5, "n": 2}
    assert wrong["abstention"] == {"accuracy": 1.0, "n": 1}
    head = qa_headline(m)
    assert (head["overall"], head["failed_as_wrong"]["overall"], head["n_failed"], head["n"]) == (2 / 3, 0.5, 1, 3)
    record = m | {k: None for k in ("reader", "memory", "variant", "suite", "cost")}
    assert QADetail.from_record(record, file="d").to_record()["failed_as_wrong"] == wrong  # typed, round trip
    with pytest.raises(InputError, match="failed_as_wrong"):  # a detail with failures must carry both numbers
        QADetail.from_record({k: v for k, v in record.items() if k != "failed_as_wrong"}, file="d")
    complete = report(judged(("q1", True), ("q2", True), ("q3", False), ("q4_abs", True)))
    assert "failed_as_wrong" not in complete and "failed_as_wrong" not in qa_headline(complete)  # same bytes as before
