"""QA aggregation (print_qa_metrics.py semantics), hand-worked, plus the upstream-format readers."""

from __future__ import annotations

import json
import math

import pytest

from mnemetric.longmemeval.hypotheses import read_hypotheses, read_judged
from mnemetric.longmemeval.reference import read_reference as read_reference_minimal
from mnemetric.errors import InputError
from mnemetric.longmemeval.judge import upstream_prompts as up
from mnemetric.longmemeval.judgments import judge_provenance, official_equivalence
from mnemetric.longmemeval.rules import OFFICIAL_JUDGE_MODEL
from mnemetric.longmemeval.scoring.qa import (
    QUESTION_TYPES,
    join_with_reference,
    match_ids,
    point_estimates,
    qa_intervals,
    qa_metrics,
)

SSU, SSP, SSA, MS, TR, KU = QUESTION_TYPES

# shared/docs/upstream-protocol.md §3.3 worked example; the second SSU entry is an abstention question.
WORKED = [
    ("u1", SSU, True), ("u2_abs", SSU, False), ("u3", SSU, False),
    ("a1", SSA, True),
    ("p1", SSP, False),
    ("m1", MS, True), ("m2", MS, True),
    ("t1", TR, False), ("t2", TR, True),
    ("k1", KU, True),
]


def test_question_types_are_the_six_upstream_types():
    assert set(QUESTION_TYPES) == {
        "single-session-user", "single-session-preference", "single-session-assistant",
        "multi-session", "temporal-reasoning", "knowledge-update"}


@pytest.mark.task("longmemeval", "single-session-user")
@pytest.mark.task("longmemeval", "single-session-assistant")
@pytest.mark.task("longmemeval", "single-session-preference")
@pytest.mark.task("longmemeval", "temporal-reasoning")
@pytest.mark.task("longmemeval", "knowledge-update")
@pytest.mark.task("longmemeval", "multi-session")
@pytest.mark.task("longmemeval", "abstention")
def test_worked_example_exact():
    m = qa_metrics(WORKED, resamples=0)
    expected = {SSU: (1 / 3, 3), SSA: (1.0, 1), SSP: (0.0, 1), MS: (1.0, 2), TR: (0.5, 2), KU: (1.0, 1)}
    for qtype, (acc, n) in expected.items():
        assert abs(m["per_type"][qtype]["accuracy"] - acc) < 1e-12
        assert m["per_type"][qtype]["n"] == n
    assert abs(m["task_averaged"] - (1 / 3 + 1 + 0 + 1 + 0.5 + 1) / 6) < 1e-12
    assert abs(m["task_averaged"] - 0.6388888888888888) < 1e-12
    assert abs(m["overall"] - 0.6) < 1e-12
    assert m["abstention"] == {"accuracy": 0.0, "n": 1}
    assert m["n"] == 10


def test_output_keys_are_exactly_the_documented_ones():
    m = qa_metrics(WORKED, resamples=50, seed=1)
    assert set(m) == {"per_type", "task_averaged", "overall", "abstention", "n"}
    assert set(m["per_type"]) == set(QUESTION_TYPES)
    assert all(set(v) == {"accuracy", "n", "ci95"} for v in m["per_type"].values())
    assert set(m["abstention"]) == {"accuracy", "n"}
    json.dumps(m, allow_nan=False)  # no NaN anywhere


def test_empty_bucket_is_null_and_task_average_is_null():
    items = [q for q in WORKED if q[1] != SSP]
    m = qa_metrics(items, resamples=100, seed=0)
    assert m["per_type"][SSP] == {"accuracy": None, "n": 0, "ci95": None}
    assert m["task_averaged"] is None  # upstream prints nan here
    assert abs(m["overall"] - 6 / 9) < 1e-12
    json.dumps(m, allow_nan=False)


@pytest.mark.task("longmemeval", "abstention")
def test_no_abstention_questions_gives_null_abstention():
    m = point_estimates([("q1", SSU, True)])
    assert m["abstention"] == {"accuracy": None, "n": 0}


def test_empty_input():
    m = qa_metrics([], resamples=10)
    assert m["n"] == 0 and m["overall"] is None and m["task_averaged"] is None


@pytest.mark.parametrize("items, field", [
    ([("q1", "abstention", True)], "question_type"),
    ([("q1", SSU, 1)], "label"),
    ([("q1", SSU, True), ("q1", SSU, False)], "question_id"),
])
def test_bad_items_are_input_errors(items, field):
    with pytest.raises(InputError) as info:
        qa_metrics(items)
    assert info.value.problem.field == field


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_is_deterministic_for_a_fixed_seed():
    many = [(f"q{i}", QUESTION_TYPES[i % 6], (i * 7) % 5 < 3) for i in range(60)]  # 10 per type, mixed labels
    a = qa_intervals(many, 500, 7)["task_averaged"]
    assert a == qa_intervals(many, 500, 7)["task_averaged"]
    b = qa_intervals(many, 500, 8)["task_averaged"]
    assert (a["low"], a["high"]) != (b["low"], b["high"])  # not just the "seed" field: the interval moves
    # per-type ci95 is the exact interval (no resampling): 1 of 2 -> [1 - sqrt(.975), sqrt(.975)]
    assert qa_metrics(WORKED, resamples=500, seed=7)["per_type"][TR]["ci95"] == pytest.approx(
        [1 - 0.975 ** 0.5, 0.975 ** 0.5], abs=1e-12)


def test_bootstrap_intervals_are_sane():
    ci = qa_intervals(WORKED, 2000, 0)
    point = point_estimates(WORKED)
    task = ci["task_averaged"]
    assert 0.0 <= task["low"] <= point["task_averaged"] <= task["high"] <= 1.0
    assert task["method"].startswith("percentile bootstrap") and task["resamples"] == 2000 and task["seed"] == 0
    assert qa_intervals(WORKED, 0, 0)["task_averaged"] is None  # no resamples: no bootstrap interval


# ---------------------------------------------------------------- id matching and coverage


def test_match_ids_complete():
    assert match_ids(["a", "b"], ["b", "a"]) == {"n_reference": 2, "n_judged": 2, "missing": []}


def test_missing_ids_are_an_error_naming_at_most_ten():
    ref = [f"q{i:02d}" for i in range(15)]
    with pytest.raises(InputError) as info:
        match_ids(["q00"], ref, file="hyp.jsonl")
    message = str(info.value)
    assert "hyp.jsonl" in message and "q01" in message and "q10" in message
    assert "q11" not in message and "4 more" in message and "allow_partial" in message


def test_extra_ids_are_an_error_even_when_partial():
    with pytest.raises(InputError, match="not in the reference: zz"):
        match_ids(["a", "zz"], ["a", "b"], allow_partial=True)


def test_duplicate_ids_are_an_error():
    with pytest.raises(InputError, match="duplicated: a"):
        match_ids(["a", "a"], ["a"])


def test_allow_partial_records_coverage():
    cov = match_ids(["a", "c"], ["a", "b", "c", "d"], allow_partial=True)
    assert cov == {"n_reference": 4, "n_judged": 2, "missing": ["b", "d"]}


def test_join_with_reference_takes_the_type_from_the_reference():
    items, cov = join_with_reference([("x_abs", True), ("y", False)], {"x_abs": TR, "y": KU, "z": MS},
                                     allow_partial=True)
    assert items == [("x_abs", TR, True), ("y", KU, False)]
    assert cov["missing"] == ["z"]


# ---------------------------------------------------------------- judge provenance


def test_official_judge_and_pinned_prompts_are_official(monkeypatch):
    monkeypatch.setattr(up, "PROMPT_SET_SHA256", None)
    assert official_equivalence([OFFICIAL_JUDGE_MODEL] * 3, "any", source_sha256=up.SHA256) is True
    monkeypatch.setattr(up, "PROMPT_SET_SHA256", "f" * 64)
    assert official_equivalence([OFFICIAL_JUDGE_MODEL], "f" * 64) is True
    assert official_equivalence([OFFICIAL_JUDGE_MODEL], "e" * 64, source_sha256=up.SHA256) is False


def test_other_judges_are_not_official_and_do_not_raise(monkeypatch):
    monkeypatch.setattr(up, "PROMPT_SET_SHA256", None)
    rec = judge_provenance([OFFICIAL_JUDGE_MODEL, "gpt-4o-mini-2024-07-18"], "x", source_sha256=up.SHA256)
    assert rec["official_equivalence"] is False
    assert rec["judge_models"] == ["gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"]
    assert "gpt-4o-mini-2024-07-18" in rec["reasons"][0]
    assert official_equivalence(["mnemetric-lexical-v1"], "x", source_sha256=up.SHA256) is False
    assert official_equivalence([OFFICIAL_JUDGE_MODEL], "x", source_sha256="0" * 64) is False
    assert official_equivalence([], "x", source_sha256=up.SHA256) is False


# ---------------------------------------------------------------- upstream-format readers → metrics


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _reference(tmp_path):
    rows = [{"question_id": q, "question_type": t, "question": f"question {q}?",
             "answer": 15 if q == "t1" else f"gold {q}", "question_date": "2023/05/20 (Sat) 02:21"}
            for q, t, _ in WORKED]
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_readers_to_metrics_end_to_end(tmp_path):
    ref = read_reference_minimal(_reference(tmp_path))
    assert ref[7].answer == 15 and ref[7].question_type == TR
    judged_path = _write_jsonl(tmp_path / "hyp.jsonl.eval-results-gpt-4o", [
        {"question_id": q, "hypothesis": "h", "autoeval_label": {"model": OFFICIAL_JUDGE_MODEL, "label": lab}}
        for q, _, lab in WORKED])
    judged = read_judged(judged_path)
    items, cov = join_with_reference([(j.question_id, j.label) for j in judged],
                                     {r.question_id: r.question_type for r in ref})
    assert cov == {"n_reference": 10, "n_judged": 10, "missing": []}
    assert qa_metrics(items, resamples=0) == qa_metrics(WORKED, resamples=0)


def test_read_hypotheses_jsonl_and_json_list(tmp_path):
    rows = [{"question_id": "a", "hypothesis": "x"}, {"question_id": "b_abs", "hypothesis": "y"}]
    jsonl = read_hypotheses(_write_jsonl(tmp_path / "h.jsonl", rows))
    (tmp_path / "h.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    assert jsonl == read_hypotheses(tmp_path / "h.json")
    assert [h.question_id for h in jsonl] == ["a", "b_abs"]


def test_reference_falls_back_to_jsonl(tmp_path):
    path = _write_jsonl(tmp_path / "ref.jsonl", [{"question_id": "a", "question_type": SSU, "question": "q", "answer": 2.5}])
    assert read_reference_minimal(path)[0].answer == 2.5


@pytest.mark.parametrize("row, field", [
    ({"hypothesis": "x"}, "question_id"),
    ({"question_id": "a"}, "hypothesis"),
    ({"question_id": "a", "hypothesis": 3}, "hypothesis"),
])
def test_bad_hypothesis_lines_name_file_line_and_field(tmp_path, row, field):
    path = _write_jsonl(tmp_path / "h.jsonl", [{"question_id": "ok", "hypothesis": "fine"}, row])
    with pytest.raises(InputError) as info:
        read_hypotheses(path)
    assert info.value.problem.file == str(path)
    assert info.value.problem.record.startswith("line 2")
    assert info.value.problem.field == field


@pytest.mark.parametrize("label, field", [({"model": "m"}, "label"), ({"model": "m", "label": "yes"}, "label"),
                                          ({"label": True}, "model"), (None, "autoeval_label")])
def test_bad_judged_lines(tmp_path, label, field):
    row = {"question_id": "a", "hypothesis": "h"}
    if label is not None:
        row["autoeval_label"] = label
    with pytest.raises(InputError) as info:
        read_judged(_write_jsonl(tmp_path / "j.jsonl", [row]))
    assert info.value.problem.field == field and info.value.problem.record == "line 1 (a)"


def test_reference_rejects_bool_answer_and_missing_type(tmp_path):
    path = tmp_path / "ref.json"
    path.write_text(json.dumps([{"question_id": "a", "question_type": SSU, "question": "q", "answer": True}]))
    with pytest.raises(InputError, match="answer"):
        read_reference_minimal(path)
    path.write_text(json.dumps([{"question_id": "a", "question": "q", "answer": "x"}]))
    with pytest.raises(InputError) as info:
        read_reference_minimal(path)
    assert info.value.problem.field == "question_type" and info.value.problem.record == "a" and info.value.problem.index == 0


def test_truncated_last_jsonl_line_names_the_line(tmp_path):
    rows = [{"question_id": q, "hypothesis": "h"} for q in ("a", "b", "c")]
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"question_id": "d", "hypo', encoding="utf-8")
    for read in (read_hypotheses, read_judged):  # the streaming reference reader: tests/longmemeval/test_reference.py
        with pytest.raises(InputError) as info:
            read(path)
        problem = info.value.problem
        assert (problem.file, problem.record, problem.field) == (str(path), "line 4", "<json>")
        assert "line 4" in str(info.value) and "not valid JSON" in problem.message


def test_broken_json_list_names_the_line(tmp_path):
    path = tmp_path / "h.json"
    path.write_text('[\n  {"question_id": "a", "hypothesis": "x"},\n  {"question_id": "b",\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_hypotheses(path)
    assert info.value.problem.record == "line 4" and info.value.problem.field == "<json>"


def test_jsonl_of_lists_is_still_jsonl(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('["a"]\n["b"]\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_hypotheses(path)
    assert info.value.problem.record == "line 1" and info.value.problem.field == "<record>"


def test_missing_reader_input_is_an_input_error(tmp_path):
    for read in (read_hypotheses, read_judged, read_reference_minimal):
        with pytest.raises(InputError) as info:
            read(tmp_path / "nope.jsonl")
        assert info.value.problem.message == "does not exist" and info.value.problem.record == "<file>"


def test_duplicate_hypothesis_id_is_an_error(tmp_path):
    path = _write_jsonl(tmp_path / "h.jsonl", [{"question_id": "a", "hypothesis": "x"}] * 2)
    with pytest.raises(InputError, match="duplicate"):
        read_hypotheses(path)


def _floats(obj):
    """Every float anywhere inside nested dicts / lists / tuples."""
    if isinstance(obj, float):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _floats(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _floats(v)


@pytest.mark.parametrize("items", [
    [],
    [("q1", SSU, True)],  # five empty type buckets, no abstention question
    [q for q in WORKED if q[1] != SSP],  # one empty type bucket
    WORKED,
], ids=["empty", "one-question", "one-empty-bucket", "worked"])
def test_nan_never_appears(items):
    for out in (point_estimates(items), qa_metrics(items, resamples=200, seed=0), qa_intervals(items, 200, 0)):
        assert all(math.isfinite(v) for v in _floats(out)), out
        json.dumps(out, allow_nan=False)
