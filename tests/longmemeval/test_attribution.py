"""Failure attribution: one hand-built case per cause, the precedence, the typed file, the moves."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.attribution import (CAUSES, Evidence, attribute_question, cause_counts, cause_moves,
                                               evidence_items)
from mnemetric.longmemeval.attribution_file import (AttributionFile, attribute_run, read_attribution, read_disputed,
                                                    write_attribution)
from mnemetric.longmemeval.attribution_report import compare_lines, report_section
from tests.conftest import ROOT

HAY = frozenset({"ans_1", "ans_2", "filler_1", "filler_2"})
RETRIEVED = Evidence(("ans_1",), frozenset({("ans_1", 2)}), HAY, (("filler_1", None), ("ans_1", None)))


def wrong(ev: Evidence, **kw):
    return attribute_question("q1", "multi-session", False, ev, **kw)


def test_answered_wrong_when_evidence_reached_the_reader():
    row = wrong(RETRIEVED)
    assert (row.outcome, row.cause, row.applies) == ("wrong", "answered_wrong", ("answered_wrong",))
    assert (row.evidence_checked, row.evidence_sessions, row.context_items, row.evidence_items) == (True, 1, 2, 1)


def test_not_retrieved_when_no_context_item_holds_evidence():
    row = wrong(Evidence(("ans_1", "ans_2"), frozenset(), HAY, (("filler_1", None), ("filler_2", None))))
    assert (row.cause, row.applies, row.evidence_items) == ("not_retrieved", ("not_retrieved",), 0)


def test_one_evidence_session_of_two_in_context_is_retrieved():
    row = wrong(Evidence(("ans_1", "ans_2"), frozenset(), HAY, (("ans_2", None),)))
    assert row.cause == "answered_wrong"


def test_turn_items_count_only_when_they_cover_a_labelled_turn():
    # a turn item carries its turn and the next: turn 1 covers the has_answer turn 2, turn 3 does not
    assert evidence_items(Evidence(("ans_1",), frozenset({("ans_1", 2)}), HAY, (("ans_1", 1),))) == 1
    assert evidence_items(Evidence(("ans_1",), frozenset({("ans_1", 2)}), HAY, (("ans_1", 3),))) == 0
    assert wrong(Evidence(("ans_1",), frozenset({("ans_1", 2)}), HAY, (("ans_1", 4),))).cause == "not_retrieved"
    # an evidence session without turn labels: any of its turns counts
    assert evidence_items(Evidence(("ans_1",), frozenset(), HAY, (("ans_1", 7), ("filler_1", 0)))) == 1


def test_evidence_not_ingested_names_the_missing_session():
    ev = Evidence(("ans_1", "ans_9"), frozenset(), HAY, (("ans_1", None),))
    row = wrong(ev)
    assert (row.cause, row.missing_sessions) == ("evidence_not_ingested", ("ans_9",))
    assert row.applies == ("evidence_not_ingested", "answered_wrong")  # ans_1 did reach the reader


def test_no_retrieval_log_line_is_never_ingested():
    row = wrong(Evidence(("ans_1",), frozenset(), None, ()))
    assert (row.cause, row.applies, row.missing_sessions) == (
        "evidence_not_ingested", ("evidence_not_ingested", "not_retrieved"), ("ans_1",))


def test_judge_disputed_and_gold_disputed_take_precedence():
    missing = Evidence(("ans_9",), frozenset(), HAY, ())
    judge = wrong(missing, judge_disputes=("positive control rejected",))
    assert judge.cause == "judge_disputed"
    assert judge.applies == ("judge_disputed", "evidence_not_ingested", "not_retrieved")
    both = wrong(missing, gold_disputes=("errata: gold wrong (#12)",), judge_disputes=("matrix split 2:3",))
    assert both.cause == "gold_disputed" and both.applies[:2] == ("gold_disputed", "judge_disputed")
    assert both.disputes == ("errata: gold wrong (#12)", "matrix split 2:3")


def test_precedence_is_the_documented_order():
    assert CAUSES == ("gold_disputed", "judge_disputed", "evidence_not_ingested", "not_retrieved", "answered_wrong")


def test_abstention_and_evidence_free_questions_are_answered_wrong_unchecked():
    abst = attribute_question("q_abs", "temporal-reasoning", False,
                              Evidence(("ans_9",), frozenset(), HAY, (), abstention=True))
    assert (abst.cause, abst.evidence_checked, abst.missing_sessions) == ("answered_wrong", False, ())
    assert wrong(Evidence((), frozenset(), HAY, ())).cause == "answered_wrong"


def test_correct_and_unjudged_questions_have_no_cause():
    ok = attribute_question("q", "multi-session", True, Evidence(("ans_9",), frozenset(), HAY, ()))
    none = attribute_question("q", "multi-session", None, RETRIEVED, judge_disputes=("x",))
    assert (ok.outcome, ok.cause, ok.applies) == ("correct", None, ())
    assert (none.outcome, none.cause) == ("not_judged", None)


def _rows():
    return {
        "a": wrong(RETRIEVED), "b": attribute_question("b", "multi-session", True, RETRIEVED),
        "c": wrong(Evidence(("ans_1",), frozenset(), HAY, ())),
    }


def test_counts_and_paired_moves():
    a = {q: r.__class__(**{**r.__dict__, "question_id": q}) for q, r in _rows().items()}
    b = dict(a)
    b["a"] = attribute_question("a", "multi-session", True, RETRIEVED)          # answered_wrong -> correct
    b["c"] = attribute_question("c", "multi-session", False, RETRIEVED)          # not_retrieved -> answered_wrong
    b["d"] = attribute_question("d", "multi-session", False, RETRIEVED)          # only in B: counted, not paired
    moves = cause_moves(a, b)
    assert moves["a"]["answered_wrong"] == 1 and moves["a"]["not_retrieved"] == 1 and moves["a"]["wrong"] == 2
    assert moves["b"]["answered_wrong"] == 2 and moves["b"]["correct"] == 2
    assert (moves["n_paired"], moves["unchanged"]) == (3, 1)
    assert moves["moves"] == [{"from": "not_retrieved", "to": "answered_wrong", "n": 1},
                              {"from": "answered_wrong", "to": "correct", "n": 1}]
    text = "\n".join(compare_lines(moves))
    assert "not_retrieved -> answered_wrong: 1" in text and "answered_wrong" in text
    assert "not recorded" in compare_lines(None)[0]


def test_file_round_trip_and_refusals(tmp_path):
    rows = tuple(r.__class__(**{**r.__dict__, "question_id": q}) for q, r in _rows().items())
    att = AttributionFile("sample", {"questions": "q.jsonl", "disputed": None}, rows)
    path = tmp_path / "attribution.json"
    write_attribution(path, att)
    back = read_attribution(path)
    assert back == AttributionFile("sample", {k: att.sources.get(k) for k in back.sources}, rows)
    assert back.counts == cause_counts(rows) and back.to_record() == json.loads(path.read_text())
    raw = json.loads(path.read_text())
    raw["questions"][0]["cause"] = "not_retrieved"
    with pytest.raises(InputError, match=r"questions\[0\] \(a\).*cause"):
        AttributionFile.from_record(raw, file="f.json")
    raw = json.loads(path.read_text())
    raw["counts"]["answered_wrong"] = 7
    with pytest.raises(InputError, match="counts"):
        AttributionFile.from_record(raw, file="f.json")
    raw = json.loads(path.read_text())
    raw["questions"][2]["applies"] = ["answered_wrong", "not_retrieved"]
    with pytest.raises(InputError, match="precedence order"):
        AttributionFile.from_record(raw, file="f.json")
    section = report_section(back)
    assert section.title.startswith("Failure attribution (2 wrong of 3")
    assert [r[1] for r in section.tables[0].rows] == ["0", "0", "0", "1", "1"]


def test_disputed_file(tmp_path):
    path = tmp_path / "disputed.jsonl"
    path.write_text('{"question_id": "q1", "reason": "negative control accepted", "source": "controls"}\n\n'
                    '{"question_id": "q1", "reason": "matrix 2:3"}\n{"question_id": "q2", "reason": "x"}\n')
    assert read_disputed(path) == {"q1": ("controls: negative control accepted", "matrix 2:3"), "q2": ("x",)}
    path.write_text('{"question_id": "q1", "reason": "ok"}\n{"question_id": "q2", "reason": "x", "why": 1}\n')
    with pytest.raises(InputError, match=r"line 2.*why"):
        read_disputed(path)
    path.write_text('{"question_id": "q1", "reason": "  "}\n')
    with pytest.raises(InputError, match=r"line 1.*reason"):
        read_disputed(path)
    path.write_text('{"question_id": "q1"')
    with pytest.raises(InputError, match=r"line 1.*JSON"):
        read_disputed(path)
    audit = tmp_path / "judge_audit.json"   # the judge-audit file (`mnemetric judge-audit validity --out`)
    record = {"official_equivalence": {"value": False, "reasons": ["a judge audit is not a score"]},
              "judged_file": {"path": "judged", "sha256": "0" * 64}, "reference_file": None, "judges": [],
              "pairwise": [], "disputed": {"q1": ["negative control accepted by lexical"]}, "items": []}
    audit.write_text(json.dumps(record, indent=2))
    assert read_disputed(audit) == {"q1": ("negative control accepted by lexical",)}
    audit.write_text(json.dumps({**record, "disputed": {"q1": "not a list"}}))
    with pytest.raises(InputError, match="disputed"):
        read_disputed(audit)


def test_stage_on_the_sample_run_is_the_committed_file(sample_run_outputs, tmp_path):
    """The stage over the reproduced sample writes, byte for byte, the committed metrics/detail/attribution.json
    (offline); a disputed-verdicts file moves its questions to judge_disputed."""
    ws = tmp_path / "ws"
    for rel in ("params.yaml", "data/errata/longmemeval.yaml", "data/suites/sample-full.questions.jsonl",
                "data/runs/hypotheses.jsonl.eval-results-lexical", "data/runs/retrieval.jsonl",
                "data/runs/contexts.jsonl", "metrics/detail/judge_audit.json"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sample_run_outputs / rel if rel.startswith("data/runs") or "suites" in rel else ROOT / rel, ws / rel)
    proc = subprocess.run([sys.executable, "-m", "mnemetric.stages.attribution"], cwd=ws, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = ws / "metrics/detail/attribution.json"
    assert out.read_bytes() == (ROOT / "metrics/detail/attribution.json").read_bytes()
    first_wrong = next(r for r in read_attribution(out).questions if r.outcome == "wrong")
    (ws / "disputed.jsonl").write_text(json.dumps({"question_id": first_wrong.question_id, "reason": "r"}) + "\n")
    sources = {**read_attribution(out).sources, "disputed": str(ws / "disputed.jsonl")}
    sources = {k: (str(ws / v) if v else v) if k != "disputed" else v for k, v in sources.items()}
    again = attribute_run(sources, "sample").by_id()[first_wrong.question_id]
    assert (again.cause, again.disputes) == ("judge_disputed", ("r",))


def test_compare_shows_causes_and_moves():
    from mnemetric.cli.compare import RunData, compare_runs, render_markdown, render_table
    from mnemetric.longmemeval.compare import RunKeys

    keys = RunKeys("v", "s", "a", "p", ("m",), None, "{}", 10, 6000)
    a_rows = (wrong(RETRIEVED), attribute_question("q2", "multi-session", True, RETRIEVED))
    b_rows = (attribute_question("q1", "multi-session", False, Evidence(("ans_1",), frozenset(), HAY, ())),
              a_rows[1])
    types = {"q1": "multi-session", "q2": "multi-session"}

    def run(name, rows):
        labels = {r.question_id: r.outcome == "correct" for r in rows}
        return RunData(name, name, keys, labels, {}, types, AttributionFile("sample", {}, rows))

    result = compare_runs(run("A", a_rows), run("B", b_rows), force=False, resamples=10, seed=0)
    assert result["attribution"]["moves"] == [{"from": "answered_wrong", "to": "not_retrieved", "n": 1}]
    assert "answered_wrong -> not_retrieved: 1" in render_table(result)
    assert "- answered_wrong -> not_retrieved: 1" in render_markdown(result)
    without = compare_runs(run("A", a_rows), RunData("B", "B", keys, {"q1": False, "q2": True}, {}, types),
                           force=False, resamples=10, seed=0)
    assert without["attribution"] is None and "not recorded" in render_table(without)
