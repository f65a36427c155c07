"""Loader and validation: one test per kind of bad input, and the real upstream sample."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric import jsonstrict
from mnemetric.longmemeval.instance import iter_instances, load_instances, validate_file
from mnemetric.longmemeval.instance_checks import WEEKDAYS, date_problem
from mnemetric.errors import InputError, ValidationFailed


def good() -> dict:
    return {
        "question_id": "abcd1234",
        "question_type": "single-session-user",
        "question": "What is my cat's name?",
        "answer": "Miso",
        "question_date": "2023/05/30 (Tue) 08:08",
        "haystack_session_ids": ["sharegpt_x_0", "answer_abcd1234"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            [{"role": "user", "content": "My cat is Miso.", "has_answer": True},
             {"role": "assistant", "content": "Nice name!", "has_answer": False}],
        ],
        "answer_session_ids": ["answer_abcd1234"],
    }


def write(tmp_path, instances) -> str:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(instances, indent=2))
    return str(path)


def only_problem(tmp_path, instance):
    n, problems = validate_file(write(tmp_path, [instance]))
    assert n == 1 and len(problems) == 1, problems
    return problems[0]


def test_good_instance_loads(tmp_path):
    (inst,) = load_instances(write(tmp_path, [good()]))
    assert inst.question_id == "abcd1234" and not inst.is_abstention
    assert inst.sessions[1].turns[0].has_answer is True and inst.sessions[0].turns[0].has_answer is None
    assert inst.to_record() == good()


def test_number_answer_is_accepted(tmp_path):
    inst = good() | {"answer": 15}
    (loaded,) = load_instances(write(tmp_path, [inst]))
    assert loaded.answer == 15


@pytest.mark.parametrize("field", ["question_id", "question", "answer", "haystack_sessions", "answer_session_ids"])
def test_missing_field(tmp_path, field):
    inst = good()
    del inst[field]
    p = only_problem(tmp_path, inst)
    assert (p.field, p.message) == (field, "missing")
    assert p.record == ("index 0" if field == "question_id" else "abcd1234")


def test_wrong_type(tmp_path):
    p = only_problem(tmp_path, good() | {"question": ["not", "a", "string"]})
    assert p.field == "question" and "expected a string, got list" in p.message


def test_boolean_answer_is_rejected(tmp_path):
    p = only_problem(tmp_path, good() | {"answer": True})
    assert p.field == "answer"


def test_unknown_question_type(tmp_path):
    p = only_problem(tmp_path, good() | {"question_type": "abstention"})
    assert p.field == "question_type" and "unknown type 'abstention'" in p.message


def test_bad_question_date(tmp_path):
    p = only_problem(tmp_path, good() | {"question_date": "2023-05-30 08:08"})
    assert p.field == "question_date" and "%Y/%m/%d (%a) %H:%M" in p.message


def test_bad_haystack_date(tmp_path):
    inst = good()
    inst["haystack_dates"][1] = "2023/13/01 (Mon) 10:00"
    p = only_problem(tmp_path, inst)
    assert p.field == "haystack_dates[1]"


def test_parallel_lists_differ(tmp_path):
    inst = good()
    inst["haystack_dates"].pop()
    p = only_problem(tmp_path, inst)
    assert p.field == "haystack_sessions" and "haystack_dates 1" in p.message


def test_answer_session_not_in_haystack(tmp_path):
    p = only_problem(tmp_path, good() | {"answer_session_ids": ["answer_missing"]})
    assert p.field == "answer_session_ids[0]" and "'answer_missing' is not in haystack_session_ids" in p.message


def test_bad_turn(tmp_path):
    inst = good()
    inst["haystack_sessions"][0][1] = {"role": "bot", "content": "x"}
    p = only_problem(tmp_path, inst)
    assert p.field == "haystack_sessions[0][1].role"


def test_bad_has_answer(tmp_path):
    inst = good()
    inst["haystack_sessions"][1][0]["has_answer"] = "yes"
    p = only_problem(tmp_path, inst)
    assert p.field == "haystack_sessions[1][0].has_answer"


def test_duplicate_question_ids(tmp_path):
    path = write(tmp_path, [good(), good()])
    n, problems = validate_file(path)
    assert n == 2 and [p.field for p in problems] == ["question_id"]
    assert "index 0 and index 1" in problems[0].message
    with pytest.raises(InputError, match="duplicate question_id"):
        load_instances(path)


def test_not_a_list(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"question_id": "a"}')
    n, problems = validate_file(path)
    assert n == 0 and problems[0].field == "<json>" and "not a JSON list" in problems[0].message


def test_truncated_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps([good(), good() | {"question_id": "b"}])[:-40])
    with pytest.raises(InputError, match="item 1 is not valid JSON"):
        load_instances(path)


def test_loader_raises_naming_file_record_field(tmp_path):
    path = write(tmp_path, [good(), good() | {"question_id": "zz", "question_type": "nope"}])
    with pytest.raises(InputError) as err:
        list(iter_instances(path))
    data = Path(path).read_bytes()
    second = data.rindex(b"{", 0, data.index(b'"zz"'))  # the first byte of the second question (its id comes first)
    assert str(err.value).startswith(f"{path}: question 'zz' (index 1, byte {second}): field 'question_type'")


def test_several_problems_in_one_instance(tmp_path):
    inst = good() | {"question_type": "nope", "question_date": "yesterday"}
    with pytest.raises(ValidationFailed) as err:
        load_instances(write(tmp_path, [inst]))
    assert len(err.value.problems) == 2


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_instances(tmp_path / "nope.json")


def test_streaming_across_small_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstrict, "CHUNK", 7)  # items much larger than a chunk
    insts = [copy.deepcopy(good()) | {"question_id": f"q{i}", "answer": i} for i in range(5)]
    loaded = load_instances(write(tmp_path, insts))
    assert [i.question_id for i in loaded] == [f"q{i}" for i in range(5)] and loaded[3].answer == 3


def test_empty_list_is_an_error(tmp_path):
    path = write(tmp_path, [])
    with pytest.raises(InputError) as err:
        load_instances(path)
    assert (err.value.problem.record, err.value.problem.field) == ("<file>", "<list>")
    assert validate_file(path)[0] == 0


def test_cli_validate_lists_all_problems_and_exits_nonzero(tmp_path):
    bad = [good() | {"question_type": "nope"}, good() | {"question_id": "b", "question_date": "x"}]
    out = subprocess.run([sys.executable, "-m", "mnemetric.cli", "validate", write(tmp_path, bad)],
                         capture_output=True, text=True)
    assert out.returncode == 1
    assert "question 'abcd1234' (index 0, byte 4): field 'question_type'" in out.stdout
    assert "question 'b' (index 1, byte " in out.stdout and "): field 'question_date'" in out.stdout


def test_real_upstream_sample_loads(upstream_sample):
    n, problems = validate_file(upstream_sample)
    assert (n, problems) == (2, [])
    a, b = load_instances(upstream_sample)
    assert (a.question_id, a.question_type) == ("6a1eabeb", "knowledge-update")
    assert b.is_abstention and b.question_type == "temporal-reasoning"
    assert [s.session_id for s in a.sessions] == ["answer_a25d4a91_1", "answer_a25d4a91_2"]
    assert all(t.has_answer is not None for s in a.sessions for t in s.turns)  # oracle: every turn flagged
    raw = json.loads(upstream_sample.read_text())
    assert [i.to_record() for i in (a, b)] == raw  # typed records round-trip the real bytes


def test_a_question_id_with_a_lone_surrogate_prints(tmp_path):
    text = json.dumps([good() | {"question_id": "PLACEHOLDER"}]).replace('"PLACEHOLDER"', '"q\\ud800"')
    path = tmp_path / "x.json"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "mnemetric.cli", "validate", str(path)], capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"{path}: question 'q\\ud800' (index 0, byte 1): field 'question_id': contains a lone UTF-16 surrogate" \
        in out.stdout


@given(st.integers(0, 10000), st.integers(0, 13), st.integers(0, 32), st.sampled_from(WEEKDAYS + ("Foo", "mon")),
       st.integers(0, 25), st.integers(0, 61))
def test_date_check_agrees_with_a_naive_datetime_check(y, mo, d, wd, h, mi):
    """Reference: datetime() accepts the values and the weekday name is the one of that day."""
    text = f"{y:04d}/{mo:02d}/{d:02d} ({wd}) {h:02d}:{mi:02d}"
    try:
        naive = WEEKDAYS[datetime(y, mo, d, h, mi).weekday()] == wd
    except ValueError:
        naive = False
    assert (date_problem(text) is None) is naive, (text, date_problem(text))
    if not naive:
        assert date_problem(text).startswith((f"{text!r} is not a real date:", f"{text!r}: wrong weekday",
                                              f"{text!r} is not in the format"))


@pytest.mark.parametrize("text", ["2023/5/20 (Sat) 02:21", "2023/05/20 02:21", " 2023/05/20 (Sat) 02:21",
                                  "2023/05/20 (Sat) 02:21:00", None, 20230520])
def test_date_format_problems(text):
    assert "is not in the format '%Y/%m/%d (%a) %H:%M'" in date_problem(text)
