"""The questions file (the eval view of a suite's questions) and the question index: typed once, round
trips, exact bytes, a bad field named; and read_adapted(only=...) skipping the other records unparsed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemetric.errors import InputError
from mnemetric.longmemeval.adapted import AdaptedRecord, Query, read_adapted
from mnemetric.longmemeval.questions import Question, read_questions, write_questions
from mnemetric.longmemeval.reference import Reference
from mnemetric.longmemeval.suite import QuestionMeta, read_question_index, write_question_index

from tests.longmemeval.test_adapted import GOOD_LINE

LINE = {"question_id": "q1", "question_type": "single-session-user", "question": "Where?", "answer": 3,
        "question_date": "2023/05/30 (Tue) 10:00", "abstention": False, "answer_session_ids": ["answer_x"],
        "query": {"query_id": "q-abc", "text": "Where?", "date": None, "prefix": ""}}
LINE_BYTES = ('{"question_id": "q1", "question_type": "single-session-user", "question": "Where?", "answer": 3, '
              '"question_date": "2023/05/30 (Tue) 10:00", "abstention": false, "answer_session_ids": ["answer_x"], '
              '"query": {"query_id": "q-abc", "text": "Where?", "date": null, "prefix": ""}}\n')
QUESTION = Question("q1", "single-session-user", "Where?", 3, "2023/05/30 (Tue) 10:00", False, ("answer_x",),
                    Query("q-abc", "Where?", None, ""))


def test_a_written_question_has_the_hand_written_bytes_and_reads_back(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    assert write_questions(path, [QUESTION]) == 1
    assert path.read_text(encoding="utf-8") == LINE_BYTES
    assert read_questions(path) == [QUESTION]
    assert QUESTION.reference == Reference("q1", "single-session-user", "Where?", 3)


def test_of_adapted_is_the_eval_view_and_the_query():
    rec = AdaptedRecord.from_record(GOOD_LINE, file="a.jsonl", line=1)
    q = Question.of_adapted(rec)
    assert q.to_record() == {k: GOOD_LINE["eval"][k] for k in LINE if k != "query"} | {
        "query": GOOD_LINE["memory"]["query"]}
    meta = QuestionMeta.of_adapted(rec)
    assert (meta.question_id, meta.sessions, meta.turns) == ("q1", 1, 2)


@pytest.mark.parametrize("change, field, message", [
    (lambda r: r.pop("answer"), "answer", "missing"),
    (lambda r: r.update(answer=True), "answer", "expected a string or a number"),
    (lambda r: r.update(abstention="no"), "abstention", "expected true or false"),
    (lambda r: r.update(extra=1), "extra", "unexpected field"),
    (lambda r: r["query"].pop("prefix"), "query.prefix", "missing"),
    (lambda r: r.update(answer_session_ids=[1]), "answer_session_ids", "expected a list of strings"),
])
def test_a_bad_field_is_named_with_file_line_and_question(tmp_path: Path, change, field, message):
    bad = json.loads(json.dumps(LINE).replace('"q1"', '"q2"'))
    change(bad)
    path = tmp_path / "q.jsonl"
    path.write_text(LINE_BYTES + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_questions(path)
    p = err.value.problem
    assert (p.file, p.record, p.field) == (str(path), "line 2 (q2)", field)
    assert p.message.startswith(message) and "dvc repro suite" in err.value.fix


def test_a_repeated_question_and_a_missing_file(tmp_path: Path):
    path = tmp_path / "q.jsonl"
    path.write_text(LINE_BYTES * 2, encoding="utf-8")
    with pytest.raises(InputError, match="duplicate question_id"):
        read_questions(path)
    with pytest.raises(InputError, match="dvc repro suite"):
        read_questions(tmp_path / "absent.jsonl")


def test_the_question_index_round_trips_with_its_bytes(tmp_path: Path):
    path = tmp_path / "i.jsonl"
    write_question_index(path, [QuestionMeta("q1_abs", "multi-session", True, 3, 14)])
    assert path.read_text(encoding="utf-8") == ('{"question_id": "q1_abs", "question_type": "multi-session", '
                                                '"abstention": true, "sessions": 3, "turns": 14}\n')
    assert read_question_index(path) == [QuestionMeta("q1_abs", "multi-session", True, 3, 14)]
    path.write_text('{"question_id": "q1", "question_type": "multi-session", "abstention": true, "sessions": -1, '
                    '"turns": 0}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_question_index(path)
    assert (err.value.problem.record, err.value.problem.field) == ("line 1", "sessions")


def _adapted(tmp_path: Path, *ids: str, broken: str | None = None) -> Path:
    lines = []
    for qid in ids:
        raw = json.loads(json.dumps(GOOD_LINE))
        raw["eval"]["question_id"] = qid
        if qid == broken:
            raw["memory"]["sessions"][0]["messages"][0]["role"] = None
        lines.append(json.dumps(raw, ensure_ascii=False) + "\n")
    path = tmp_path / "a.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_only_keeps_file_order_and_skips_the_others_unparsed(tmp_path: Path):
    path = _adapted(tmp_path, "q1", "q2", "q3", broken="q2")  # q2 is malformed: skipped, so never refused
    assert [r.eval.question_id for r in read_adapted(path, only=["q3", "q1"])] == ["q1", "q3"]
    with pytest.raises(InputError) as err:
        list(read_adapted(path))
    assert err.value.problem.record == "line 2"


def test_only_names_a_suite_question_the_file_lacks(tmp_path: Path):
    path = _adapted(tmp_path, "q1")
    with pytest.raises(InputError) as err:
        list(read_adapted(path, only=["q1", "q9"]))
    assert err.value.problem.field == "eval.question_id" and "'q9'" in err.value.problem.message


def test_only_reads_a_line_of_another_layout_in_full(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    other = {"eval": GOOD_LINE["eval"], "memory": GOOD_LINE["memory"]}  # eval first: the quick id read does not apply
    path.write_text(json.dumps(other, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    assert [r.eval.question_id for r in read_adapted(path, only=["q1"])] == ["q1"]
    assert list(read_adapted(path, only=[])) == []
