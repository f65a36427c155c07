"""Issue 7, item 7: every bad LongMemEval (V1) input gets a clear error naming file, record, field.

One test per gap. Each was run against the code before the fix and failed there (the docstring
says how); expected values are worked out by hand or computed here from the bytes the test wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.config import compose_to
from mnemetric.longmemeval.instance import load_instances, validate_file
from mnemetric.errors import InputError, ValidationFailed
from mnemetric.io import read_jsonl
from mnemetric.longmemeval.adapt import adapt_file

from tests.conftest import ROOT
from tests.longmemeval.test_instance import good  # one valid instance, shared

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"


def write_text(tmp_path: Path, text: str, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def dumps(instances) -> str:
    return json.dumps(instances, indent=2)


def only(problems):
    assert len(problems) == 1, problems
    return problems[0]


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemetric.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


# ------------------------------------------------------------------ accepted before, must not be


@pytest.mark.parametrize("tail", ["garbage", '[{"question_id": "x"}]', "]", ","])
def test_trailing_data_after_the_list_is_an_error(tmp_path, tail):
    """Before: validate_file said (1, []) and load_instances returned one instance."""
    text = dumps([good()])
    path = write_text(tmp_path, text + "\n\n" + tail + "\n")
    line = text.count("\n") + 3  # the list's lines, then one blank line, then the tail
    n, problems = validate_file(path)
    p = only(problems)
    assert (p.file, p.record, p.field) == (str(path), f"line {line}", "<json>")
    assert "after the closing ']'" in p.message and repr(tail[0]) in p.message
    with pytest.raises(InputError, match="after the closing"):
        load_instances(path)


@pytest.mark.parametrize("token, field", [
    ("NaN", "answer"),
    ("Infinity", "answer"),
    ("-Infinity", "haystack_sessions[0][1].content"),
    ("1e999", "answer"),  # overflows to inf in Python's json
    ("-1E400", "meta.scores[1]"),
])
def test_nan_and_infinity_are_rejected_anywhere(tmp_path, token, field):
    """Before: all five were accepted (an answer of NaN even loaded as a float)."""
    inst = good() | {"meta": {"scores": [1.5, "PLACEHOLDER"]}}
    if field == "answer":
        inst["answer"] = "PLACEHOLDER"
    elif field.startswith("haystack"):
        inst["haystack_sessions"][0][1]["content"] = "PLACEHOLDER"
    path = write_text(tmp_path, dumps([inst]).replace('"PLACEHOLDER"', token, 1).replace('"PLACEHOLDER"', "2"))
    n, problems = validate_file(path)
    p = only(problems)  # one problem: the bad number, not also "expected a string" for the same field
    assert (p.record, p.field) == ("abcd1234", field)
    assert token in p.message and "not valid JSON" in p.message
    with pytest.raises(InputError, match=token):
        load_instances(path)


def test_an_empty_list_is_an_error(tmp_path):
    """Before: validate_file said (0, []) and `mnemetric validate` exited 0."""
    path = write_text(tmp_path, "[ ]\n")
    n, problems = validate_file(path)
    p = only(problems)
    assert n == 0 and (p.record, p.field) == ("<file>", "<list>") and "empty" in p.message
    with pytest.raises(InputError, match="empty"):
        load_instances(path)
    assert cli("validate", path).returncode == 1


def test_duplicate_haystack_session_ids_with_different_content_are_an_error(tmp_path):
    """Before: accepted (the adapters then mapped one upstream id to two different sessions)."""
    inst = good()
    inst["haystack_session_ids"] = ["sharegpt_x_0", "sharegpt_x_0", "answer_abcd1234"]
    inst["haystack_dates"].insert(1, "2023/05/20 (Sat) 09:00")
    inst["haystack_sessions"].insert(1, [{"role": "user", "content": "something else"}])
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field) == ("abcd1234", "haystack_session_ids[1]")
    assert "'sharegpt_x_0'" in p.message and "haystack_session_ids[0]" in p.message


def test_a_duplicated_answer_session_is_an_error_even_with_equal_content(tmp_path):
    """Before: accepted."""
    inst = good()
    inst["haystack_session_ids"].append("answer_abcd1234")
    inst["haystack_dates"].append("2023/05/22 (Mon) 10:00")
    inst["haystack_sessions"].append(json.loads(json.dumps(inst["haystack_sessions"][1])))
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field) == ("abcd1234", "haystack_session_ids[2]")


def test_duplicate_filler_with_identical_content_is_only_a_warning(tmp_path):
    """Real S data has 13 such pairs (LongMemEval issue #54): the file must still validate.
    Before: no warning was printed."""
    inst = good()
    inst["haystack_session_ids"].insert(1, "sharegpt_x_0")
    inst["haystack_dates"].insert(1, "2023/05/20 (Sat) 09:00")
    inst["haystack_sessions"].insert(1, json.loads(json.dumps(inst["haystack_sessions"][0])))
    path = write_text(tmp_path, dumps([inst]))
    assert validate_file(path) == (1, [])
    out = cli("validate", path)
    assert out.returncode == 0, out.stdout + out.stderr
    at = path.read_bytes().index(b"{")  # the first byte of the only question
    assert f"warning: {path}: question 'abcd1234' (index 0, byte {at}): field 'haystack_session_ids[1]'" in out.stdout


@pytest.mark.parametrize("field", ["question_date", "haystack_dates[0]"])
def test_a_weekday_that_does_not_match_the_date_is_an_error(tmp_path, field):
    """2023/05/30 was a Tuesday; 2023/05/20 a Saturday. Before: "(Mon)" was accepted for both."""
    inst = good()
    if field == "question_date":
        inst["question_date"] = "2023/05/30 (Mon) 08:08"
    else:
        inst["haystack_dates"][0] = "2023/05/20 (Fri) 02:21"
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field) == ("abcd1234", field)
    assert ("Tue" if field == "question_date" else "Sat") in p.message and "weekday" in p.message


# ------------------------------------------------------------------ misreported before


def test_a_utf8_bom_is_named(tmp_path):
    """Before: "does not start with '[' (not a JSON list)"."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + dumps([good()]).encode())
    p = only(validate_file(path)[1])
    assert (p.record, p.field) == ("line 1", "<encoding>")
    assert "byte order mark" in p.message and "not start with" not in p.message


def test_non_utf8_bytes_are_a_clear_error_with_their_byte_offset(tmp_path):
    """Before: a raw UnicodeDecodeError came out of validate_file (a traceback in the CLI)."""
    head = dumps([good(), good() | {"question_id": "b2"}]).encode()
    cut = head.index(b"My cat")
    data = head[:cut] + b"Caf\xe9 " + head[cut:]  # latin-1 e-acute
    path = tmp_path / "latin1.json"
    path.write_bytes(data)
    offset, line = cut + 3, data[: cut + 3].count(b"\n") + 1
    p = only(validate_file(path)[1])
    assert (p.record, p.field) == (f"line {line}", "<encoding>")
    assert f"byte offset {offset}" in p.message and "0xe9" in p.message and "UTF-8" in p.message
    out = cli("validate", path)
    assert out.returncode == 1 and "Traceback" not in out.stderr and f"byte offset {offset}" in out.stdout


@pytest.mark.parametrize("date, says", [
    ("2023/02/30 (Thu) 10:00", "day 30 does not exist in 2023/02 (28 days)"),
    ("2024/02/30 (Fri) 10:00", "day 30 does not exist in 2024/02 (29 days)"),
    ("2023/05/20 (Sat) 24:10", "hour 24"),
    ("2023/05/20 (Sat) 10:60", "minute 60"),
    ("2023/00/20 (Sat) 10:00", "month 00"),
])
def test_an_impossible_date_is_named_as_such(tmp_path, date, says):
    """Before: "... is not in the format '%Y/%m/%d (%a) %H:%M'" although the format is right."""
    p = only(validate_file(write_text(tmp_path, dumps([good() | {"question_date": date}])))[1])
    assert p.field == "question_date" and says in p.message and "not in the format" not in p.message


# ------------------------------------------------------------------ adapt reports all, writes nothing


def _three_bad(tmp_path) -> Path:
    items = [good() | {"question_id": f"q{i}"} for i in range(6)]
    items[1]["question_type"] = "nope"
    items[3]["question_date"] = "2023/02/30 (Thu) 10:00"
    items[5]["answer_session_ids"] = ["answer_missing"]
    return write_text(tmp_path, dumps(items))


def test_adapt_reports_every_problem_and_writes_nothing(tmp_path):
    """Before: InputError for q1 only (one problem); q3 and q5 unreported."""
    out = tmp_path / "adapted" / "x.jsonl"
    with pytest.raises(ValidationFailed) as info:
        adapt_file(V3, _three_bad(tmp_path), out)
    assert [(p.record, p.field) for p in info.value.problems] == [
        ("q1", "question_type"), ("q3", "question_date"), ("q5", "answer_session_ids[0]")]
    assert "3 problem(s)" in str(info.value)
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_many_problems_are_capped_at_50_listed_plus_a_count(tmp_path):
    """Before: only the first of 120 problems was reported."""
    items = [good() | {"question_id": f"q{i}", "question_type": "nope"} for i in range(120)]
    with pytest.raises(ValidationFailed) as info:
        adapt_file(V3, write_text(tmp_path, dumps(items)), tmp_path / "out.jsonl")
    text = str(info.value)
    assert "120 problem(s) found" in text and "... and 70 more" in text
    assert text.count("field 'question_type'") == 50 and "question 'q49' (index 49, byte " in text
    assert "question 'q50'" not in text
    assert len(info.value.problems) == 50  # kept in memory: the listed ones only
    assert not (tmp_path / "out.jsonl").exists()


def test_adapt_stage_lists_several_problems_and_leaves_no_output(tmp_path):
    """`python -m mnemetric.stages.adapt` on a broken raw file. Before: exit 2 naming q1 only."""
    compose_to(tmp_path / "params.yaml", ROOT / "conf")
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw = tmp_path / params["paths"]["raw_dir"] / params["variant"]["file"]
    raw.parent.mkdir(parents=True)
    raw.write_bytes(_three_bad(tmp_path).read_bytes())
    proc = subprocess.run([sys.executable, "-m", "mnemetric.stages.adapt"], cwd=tmp_path, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "3 problem(s) found" in proc.stderr
    data = raw.read_bytes()
    for qid, index, field in (("q1", 1, "question_type"), ("q3", 3, "question_date"), ("q5", 5, "answer_session_ids[0]")):
        at = data.rindex(b"{", 0, data.index(f'"question_id": "{qid}"'.encode()))  # each question opens with its id
        assert f"question '{qid}' (index {index}, byte {at}): field '{field}'" in proc.stderr, proc.stderr
    adapted = tmp_path / params["paths"]["adapted"]
    assert not adapted.exists() and (not adapted.parent.exists() or list(adapted.parent.iterdir()) == [])


# ------------------------------------------------------------------ our own JSONL formats


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_read_jsonl_rejects_nan_with_file_and_line(tmp_path, token):
    """Before: read_jsonl yielded {"x": nan} (or inf) without complaint."""
    path = write_text(tmp_path, '{"x": 1}\n\n{"x": ' + token + "}\n", "a.jsonl")
    with pytest.raises(InputError) as info:
        list(read_jsonl(path))
    p = info.value.problem
    assert (p.file, p.record, p.field) == (str(path), "line 3", "<json>") and token in p.message


def test_read_jsonl_non_utf8_names_the_line(tmp_path):
    """Before: a raw UnicodeDecodeError."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"x": 1}\n{"x": "\xff"}\n')
    with pytest.raises(InputError) as info:
        list(read_jsonl(path))
    assert info.value.problem.record == "line 2" and "UTF-8" in info.value.problem.message


# ------------------------------------------------------------------ what a careful user hits next


def test_an_answer_session_id_without_answer_in_it_is_an_error(tmp_path):
    """Upstream scoring finds evidence by the substring "answer" in the session id
    (run_retrieval.py @ 9e0b455f), so this label would be silently ignored. Before: accepted."""
    inst = good() | {"answer_session_ids": ["sharegpt_x_0", "answer_abcd1234"]}
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field) == ("abcd1234", "answer_session_ids[0]") and "'answer'" in p.message


def test_has_answer_true_outside_an_answer_session_is_an_error(tmp_path):
    """Before: accepted (turn targets would silently ignore it)."""
    inst = good()
    inst["haystack_sessions"][0][0]["has_answer"] = True
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field) == ("abcd1234", "haystack_sessions[0][0].has_answer")


def test_a_user_turn_of_an_answer_session_needs_has_answer(tmp_path):
    """Upstream run_retrieval.py requires has_answer on every user turn of an answer session
    (it would stop with an AssertionError / KeyError). Before: accepted."""
    inst = good()
    del inst["haystack_sessions"][1][0]["has_answer"]
    p = only(validate_file(write_text(tmp_path, dumps([inst])))[1])
    assert (p.record, p.field, p.message.split(":")[0]) == ("abcd1234", "haystack_sessions[1][0].has_answer",
                                                            "missing")


@pytest.mark.parametrize("date, same_day", [("2023/05/21 (Sun) 09:59", True), ("2023/05/20 (Sat) 10:00", False)])
def test_a_question_date_before_the_last_session_is_a_warning(tmp_path, date, same_day):
    """Upstream S has 77 such questions (same day; issue #8): a warning, never an error.
    Before: nothing was said."""
    path = write_text(tmp_path, dumps([good() | {"question_date": date}]))
    assert validate_file(path) == (1, [])
    out = cli("validate", path)
    assert out.returncode == 0 and "1 warning(s)" in out.stderr
    at = path.read_bytes().index(b"{")  # the first byte of the only question
    assert f"warning: {path}: question 'abcd1234' (index 0, byte {at}): field 'question_date'" in out.stdout
    assert ("same day" in out.stdout) is same_day and "2023/05/21 (Sun) 10:00" in out.stdout


def test_an_answer_session_missing_from_answer_session_ids_is_a_warning(tmp_path):
    """Upstream scoring would still count it as evidence. Before: nothing was said."""
    path = write_text(tmp_path, dumps([good() | {"answer_session_ids": []}]))
    assert validate_file(path) == (1, [])
    out = cli("validate", path)
    assert out.returncode == 0 and "field 'haystack_session_ids[1]'" in out.stdout and "warning:" in out.stdout


def test_a_lone_surrogate_is_an_error_not_a_crash_at_write_time(tmp_path):
    r"""A "\ud800" escape decodes to a string that cannot be written as UTF-8. Before: validate
    said nothing and adapt died with a UnicodeEncodeError traceback."""
    inst = good()
    inst["haystack_sessions"][0][0]["content"] = "PLACEHOLDER"
    text = dumps([inst]).replace('"PLACEHOLDER"', '"ok \\ud83d\\ude00 bad \\ud800"')
    path = write_text(tmp_path, text)
    p = only(validate_file(path)[1])
    assert (p.record, p.field) == ("abcd1234", "haystack_sessions[0][0].content") and "surrogate" in p.message
    with pytest.raises(InputError):
        adapt_file(V3, path, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("text, needle", [
    ("[" + "[" * 100_000 + "]" * 100_000 + "]", "nested too deeply"),
    ('[{"question_id": "a", "answer": ' + "7" * 5000 + "}]", "digits"),
])
def test_pathological_json_is_an_error_not_a_crash(tmp_path, text, needle):
    """Before: RecursionError / ValueError tracebacks out of the JSON decoder."""
    p = only(validate_file(write_text(tmp_path, text))[1])
    assert p.record == "index 0" and needle in p.message


def test_an_empty_question_id_is_an_error(tmp_path):
    """Before: accepted ("" then named the record "index 0" everywhere downstream)."""
    p = only(validate_file(write_text(tmp_path, dumps([good() | {"question_id": ""}])))[1])
    assert (p.record, p.field) == ("index 0", "question_id")


def test_validate_exit_codes(tmp_path):
    """1 = the file has problems; 2 = another user error (no such file). Before: 1 for both."""
    assert cli("validate", tmp_path / "nope.json").returncode == 2
    assert cli("validate", write_text(tmp_path, dumps([good()]))).returncode == 0
    assert cli("validate", write_text(tmp_path, dumps([good() | {"question_type": "x"}]))).returncode == 1


# ------------------------------------------------------------------ real files still validate


def _late_questions(path: Path) -> list[str]:
    """Naive count: question_date earlier than the latest haystack date (dates sort lexically)."""
    return [x["question_id"] for x in json.loads(path.read_text()) if x["question_date"] < max(x["haystack_dates"])]


@pytest.mark.parametrize("which", ["upstream", "bundled"])
def test_real_upstream_and_bundled_samples_have_zero_problems(request, which):
    path = request.getfixturevalue("upstream_sample") if which == "upstream" else SAMPLE
    n, problems = validate_file(path)
    assert problems == [] and n == len(json.loads(path.read_text()))
    late = _late_questions(path)
    assert late == (["gpt4_70e84552_abs"] if which == "upstream" else ["gpt4_423b35b9_abs"])
    out = cli("validate", path)
    assert out.returncode == 0 and f"{n} instances, 0 problem(s), {len(late)} warning(s)" in out.stderr
    assert [line.split(": ")[2].split("'")[1] for line in out.stdout.splitlines()] == late
    records = [V3.adapt(inst, i) for i, inst in enumerate(load_instances(path))]
    assert len(records) == n
