"""The one reference record and reader: every refusal names file / record / field; the list is streamed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.longmemeval.reference import (
    Reference,
    iter_reference,
    read_reference,
    reference_by_id,
    reference_ids,
    reference_types,
)

SSU, TR, KU = "single-session-user", "temporal-reasoning", "knowledge-update"


def _row(qid: str, qtype: str = SSU, answer=None, **extra) -> dict:
    return {"question_id": qid, "question_type": qtype, "question": f"q {qid}?",
            "answer": f"gold {qid}" if answer is None else answer, **extra}


def _write_list(path: Path, rows) -> Path:
    path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return path


def _problem(path: Path):
    with pytest.raises(InputError) as info:
        read_reference(path)
    p = info.value.problem
    return p.file, p.record, p.field, p.message


def test_reads_the_four_fields_of_a_json_list_in_file_order(tmp_path):
    path = _write_list(tmp_path / "ref.json", [
        _row("a", SSU, haystack_sessions=[[{"role": "user", "content": "x"}]], question_date="2023/05/20 (Sat) 02:21"),
        _row("b_abs", TR, answer=15), _row("c", KU, answer=2.5)])
    assert read_reference(path) == [Reference("a", SSU, "q a?", "gold a"), Reference("b_abs", TR, "q b_abs?", 15),
                                    Reference("c", KU, "q c?", 2.5)]
    assert reference_types(path) == {"a": SSU, "b_abs": TR, "c": KU}
    assert reference_ids(path) == {"a", "b_abs", "c"}
    assert reference_by_id(path)["b_abs"].answer == 15


def test_jsonl_fallback_names_lines(tmp_path):
    path = tmp_path / "ref.jsonl"
    path.write_text(json.dumps(_row("a")) + "\n\n" + json.dumps({"question_id": "b", "question": "q", "answer": "x"})
                    + "\n", encoding="utf-8")
    assert _problem(path)[:3] == (str(path), "line 3 (b)", "question_type")
    path.write_text(json.dumps(_row("a", answer=2.5)) + "\n", encoding="utf-8")
    assert read_reference(path) == [Reference("a", SSU, "q a?", 2.5)]


def test_truncated_jsonl_reference_names_the_line(tmp_path):
    path = tmp_path / "ref.jsonl"
    path.write_text(json.dumps(_row("a")) + "\n" + '{"question_id": "b", "quest', encoding="utf-8")
    file, record, field, message = _problem(path)
    assert (file, record, field) == (str(path), "line 2", "<json>") and "not valid JSON" in message


@pytest.mark.parametrize("row, record, field", [
    ({"question_type": SSU, "question": "q", "answer": "x"}, "index 1", "question_id"),
    ({"question_id": 7, "question_type": SSU, "question": "q", "answer": "x"}, "index 1", "question_id"),
    ({"question_id": "", "question_type": SSU, "question": "q", "answer": "x"}, "index 1", "question_id"),
    ({"question_id": "b", "question": "q", "answer": "x"}, "b", "question_type"),
    ({"question_id": "b", "question_type": "single-session", "question": "q", "answer": "x"}, "b",
     "question_type"),
    ({"question_id": "b", "question_type": SSU, "answer": "x"}, "b", "question"),
    ({"question_id": "b", "question_type": SSU, "question": ["q"], "answer": "x"}, "b", "question"),
    ({"question_id": "b", "question_type": SSU, "question": "q"}, "b", "answer"),
    ({"question_id": "b", "question_type": SSU, "question": "q", "answer": True}, "b", "answer"),
    ({"question_id": "b", "question_type": SSU, "question": "q", "answer": None}, "b", "answer"),
    (["not", "an", "object"], "index 1", "<record>"),
    (_row("a"), "a", "question_id"),  # duplicate of item 0
])
def test_every_refusal_names_file_record_and_field(tmp_path, row, record, field):
    path = _write_list(tmp_path / "ref.json", [_row("a"), row])
    assert _problem(path)[:3] == (str(path), record, field)
    with pytest.raises(InputError) as info:
        read_reference(path)
    second = len(json.dumps([_row("a")], indent=1)) - len("\n]") + len(",\n ")  # the second item's first byte
    assert path.read_bytes()[second:second + 1] in (b"{", b"[")
    assert (info.value.problem.index, info.value.problem.offset) == (1, second)


def test_unknown_question_type_says_which_types_are_allowed(tmp_path):
    path = _write_list(tmp_path / "ref.json", [_row("a", "multi-session-user")])
    with pytest.raises(InputError) as info:
        read_reference(path)
    assert "multi-session-user" in info.value.problem.message
    assert "temporal-reasoning" in (info.value.fix or "")


@pytest.mark.parametrize("content, record", [("[]", "<file>"), ("", "<file>")])
def test_an_empty_reference_is_refused(tmp_path, content, record):
    path = tmp_path / "ref.json"
    path.write_text(content, encoding="utf-8")
    assert _problem(path)[1] == record


def test_missing_file_and_folder_are_input_errors(tmp_path):
    assert _problem(tmp_path / "nope.json")[1:4] == ("<file>", "<file>", "does not exist")
    assert _problem(tmp_path)[3] == "is a folder, not a file"


def test_a_bad_item_late_in_the_list_is_reached_by_the_stream(tmp_path):
    """Items before the bad one are yielded before it raises, and the error names its index."""
    rows = [_row(f"q{i}") for i in range(500)] + [_row("late", "no-such-type")] + [_row("after")]
    path = _write_list(tmp_path / "ref.json", rows)
    stream = iter_reference(path)
    first = [next(stream) for _ in range(500)]
    assert first[-1].question_id == "q499"
    with pytest.raises(InputError) as info:
        next(stream)
    assert (info.value.problem.record, info.value.problem.field) == ("late", "question_type")
    data = path.read_bytes()
    assert (info.value.problem.index, info.value.problem.offset) == (500, data.rindex(b"{", 0, data.index(b'"late"')))


def test_a_broken_list_tail_is_reported_after_the_good_items(tmp_path):
    path = tmp_path / "ref.json"
    path.write_text("[" + json.dumps(_row("a")) + ",\n" + json.dumps(_row("b"))[:-5], encoding="utf-8")
    stream = iter_reference(path)
    assert next(stream).question_id == "a"
    with pytest.raises(InputError) as info:
        list(stream)
    assert (info.value.problem.record, info.value.problem.field) == ("index 1", "<json>")


def test_to_record_round_trips(tmp_path):
    ref = Reference("x_abs", KU, "q?", 3)
    assert Reference.from_record(ref.to_record(), file="f", line="index 0") == ref
    assert ref.to_record() == {"question_id": "x_abs", "question_type": KU, "question": "q?", "answer": 3}


_TYPES = st.sampled_from(["single-session-user", "single-session-assistant", "single-session-preference",
                          "temporal-reasoning", "knowledge-update", "multi-session"])
_ANSWERS = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=6), _TYPES, _ANSWERS), max_size=12, unique_by=lambda t: t[0]),
       st.booleans())
def test_property_matches_a_naive_whole_file_reader(tmp_path_factory, items, as_list):
    """A second reader (json.load / json.loads per line, then pick the fields) sees the same records."""
    rows = [_row(q, t, answer=a) for q, t, a in items] or [_row("only")]
    path = tmp_path_factory.mktemp("ref") / "ref.json"
    text = json.dumps(rows) if as_list else "".join(json.dumps(r) + "\n" for r in rows)
    path.write_text(text, encoding="utf-8")
    naive = json.loads(text) if as_list else [json.loads(line) for line in text.splitlines() if line.strip()]
    expected = [(r["question_id"], r["question_type"], r["question"], r["answer"]) for r in naive]
    got = [(r.question_id, r.question_type, r.question, r.answer) for r in read_reference(path)]
    assert got == expected


# ---------------------------------------------------------------- every former caller goes through it

SRC = Path(__file__).resolve().parents[2] / "src" / "mnemetric"


def test_no_second_reference_reader_or_record_is_left():
    """The removed names are gone from src/ (a second reader would bring one of them back)."""
    gone = ("ReferenceItem", "read_reference_minimal", "_reference_records", "load_reference_ids")
    hits = [f"{p.relative_to(SRC)}: {name}" for p in SRC.rglob("*.py") for name in gone if name in p.read_text()]
    assert hits == []
    from mnemetric.longmemeval.judge import run

    assert run.Reference is Reference


def test_family_reference_types_is_the_reader(tmp_path):
    from mnemetric.longmemeval.crosscheck import CROSSCHECK

    family_types = CROSSCHECK.reference_types  # what the family's cross-check reads the reference with

    path = _write_list(tmp_path / "ref.json", [_row("a", TR), _row("b", "bogus")])
    with pytest.raises(InputError) as info:
        family_types(path)
    assert info.value.problem.record == "b" and info.value.problem.field == "question_type"


def test_retrieval_scoring_checks_the_reference_through_the_reader(tmp_path):
    from mnemetric.longmemeval.scoring.score_retrieval import score_retrieval_log

    log = tmp_path / "log.jsonl"
    log.write_text("", encoding="utf-8")
    ref = _write_list(tmp_path / "ref.json", [_row("a"), {"question_id": "b", "question_type": SSU}])
    with pytest.raises(InputError) as info:
        score_retrieval_log(log, "session", "longmemeval-session-upstream-v1", reference_path=ref)
    assert (info.value.problem.file, info.value.problem.record, info.value.problem.field) == (
        str(ref), "b", "question")


@pytest.mark.parametrize("command", ["judge", "score-qa"])
def test_cli_commands_read_the_reference_through_the_reader(tmp_path, command):
    """An unknown question type in the reference stops the command with a named error, no traceback."""
    ref = _write_list(tmp_path / "ref.json", [_row("a", "bogus-type")])
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text(json.dumps({"question_id": "a", "hypothesis": "gold a",
                               "autoeval_label": {"model": "m", "label": True}}) + "\n", encoding="utf-8")
    args = (["judge", "--judge", "lexical", str(hyp), str(ref)] if command == "judge"
            else ["score-qa", "--out", str(tmp_path / "qa.json"), str(hyp), str(ref)])
    out = subprocess.run([str(Path(sys.executable).parent / "mnemetric"), *args], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "question_type" in out.stderr and "question 'a' (index 0, byte 3)" in out.stderr and "bogus-type" in out.stderr
