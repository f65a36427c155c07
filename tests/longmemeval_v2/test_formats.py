"""Typed V2 records (questions, trajectories, haystacks) and the strict JSON reader, on hand-made rows.

Expected values are worked by hand from the rules in shared/docs/upstream-v2-protocol.md §2/§5 and
upstream memory_modules/trajectory_store.py / evaluation/qa_eval_metrics.py at be15ea6.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import InputError, Problem
from mnemetric.longmemeval_v2.haystacks import Haystack, haystack_file, read_haystack
from mnemetric.longmemeval_v2.jsonfiles import Row, data_path_problem, load_json, scan_jsonl
from mnemetric.longmemeval_v2.questions import EvalSpec, Question, SpecError, iter_questions
from mnemetric.longmemeval_v2.trajectories import Trajectory, iter_trajectories

QUESTION = {"id": "q1", "domain": "web", "question_type": "static-environment", "question": "Which colour?",
            "image": None, "answer": "blue", "eval_function": "norm_phrase_set_match", "note": "kept"}


def state(**over):
    base = {"url": "http://x.test/a", "action": "click", "thought": "t", "accessibility_tree": "page",
            "screenshot": "screenshots/t1/0.png", "step": 0}
    return {k: v for k, v in (base | over).items() if v is not ...}


def trajectory(**over):
    return {"id": "t1", "domain": "web", "goal": "g", "start_url": "http://x.test/", "outcome": None,
            "states": [state()]} | over


# ------------------------------------------------------------------ questions


def test_question_round_trip_keeps_extra_keys():
    q = Question.from_record(QUESTION, file="questions.jsonl", line=1)
    assert (q.id, q.domain, q.answer, q.image) == ("q1", "web", "blue", None)
    assert q.to_record() == QUESTION
    assert not q.is_abstention_problem


def test_a_row_without_an_image_key_has_no_image():
    raw = {k: v for k, v in QUESTION.items() if k != "image"}
    q = Question.from_record(raw, file="questions.jsonl", line=1)
    assert q.image is None and q.to_record() == raw | {"image": None}


def test_question_error_names_file_record_and_field():
    with pytest.raises(InputError) as err:
        Question.from_record({k: v for k, v in QUESTION.items() if k != "answer"}, file="questions.jsonl", line=4)
    assert err.value.problem == Problem("questions.jsonl", "q1", "answer", "missing")


def test_question_without_id_is_named_by_line():
    with pytest.raises(InputError) as err:
        Question.from_record(QUESTION | {"id": ""}, file="questions.jsonl", line=7)
    assert (err.value.problem.record, err.value.problem.field) == ("line 7", "id")


@pytest.mark.parametrize("over, fld", [
    ({"domain": "mobile"}, "domain"), ({"question": "  "}, "question"), ({"answer": 3}, "answer"),
    ({"question_type": "knowledge-update"}, "question_type"), ({"image": "../up.png"}, "image"),
    ({"image": "/etc/x.png"}, "image"), ({"image": ""}, "image"), ({"eval_function": ""}, "eval_function"),
    ({"eval_function": "llm_abstention_checker"}, "eval_function"),  # needs an -abs type
])
def test_question_bad_fields(over, fld):
    with pytest.raises(InputError) as err:
        Question.from_record(QUESTION | over, file="f", line=1)
    assert err.value.problem.field == fld


def test_abstention_is_decided_by_the_checker_not_the_type():
    abs_llm = Question.from_record(QUESTION | {"question_type": "procedure-abs", "eval_function": "llm_abstention_checker"},
                                   file="f", line=1)
    abs_mc = Question.from_record(QUESTION | {"question_type": "procedure-abs", "eval_function": "mc_choice_match"},
                                  file="f", line=1)
    assert abs_llm.is_abstention_problem and not abs_mc.is_abstention_problem


@pytest.mark.parametrize("text, name, options", [
    ('norm_phrase_set_match|separators=[";"]', "norm_phrase_set_match", (("separators", [";"]),)),
    ("norm_phrase_set_match | separators=,; x | lower=FALSE", "norm_phrase_set_match",
     (("separators", [",", ";", "x"]), ("lower", False))),
    ("norm_phrase_set_match|separators=", "norm_phrase_set_match", (("separators", []),)),
    ("mc_choice_match|strip_chars=.)", "mc_choice_match", (("strip_chars", ".)"),)),
    ("mc_choice_match||  |", "mc_choice_match", ()),
    ("llm_gotchas_checker|evaluator_max_completion_tokens=4096|evaluator_temperature=0.5|evaluator_model=Null",
     "llm_gotchas_checker", (("evaluator_max_completion_tokens", 4096), ("evaluator_temperature", 0.5),
                             ("evaluator_model", None))),
    ("llm_abstention_checker|evaluator_model=gpt-x", "llm_abstention_checker", (("evaluator_model", "gpt-x"),)),
    ("mc_choice_set_match|note=x", "mc_choice_set_match", (("note", "x"),)),  # accepted and ignored upstream
    ("norm_phrase_set_match|lower=0", "norm_phrase_set_match", (("lower", 0),)),
])
def test_eval_spec_worked_examples(text, name, options):
    spec = EvalSpec.parse(text)
    assert (spec.name, spec.options) == (name, options)


@pytest.mark.parametrize("text, says", [
    ("", "non-empty"), ("|lower=true", "name"), ("normalize_phrase", "unknown checker"),
    ("mc_choice_match|x", "not key=value"), ("mc_choice_match|=3", "not key=value"),
    ("mc_choice_match|strip_chars=a|strip_chars=b", "twice"),
    ("norm_phrase_set_match|separator=;", "no option 'separator'"),
    ("norm_phrase_set_match|lower=yes", "true or false"),  # truthy text upstream: a silent misread
    ("mc_choice_match|require_non_empty=no", "true or false"),
    ("norm_phrase_set_match|separators=[1]", "non-empty strings"),
    ('norm_phrase_set_match|separators=[""]', "non-empty strings"),
    ("norm_phrase_set_match|separators=[bad]", "JSON list"),
    ("mc_choice_match|strip_chars=1.5", "text"),
])
def test_eval_spec_errors(text, says):
    with pytest.raises(SpecError, match=says):
        EvalSpec.parse(text)


# ------------------------------------------------------------------ trajectories


def test_trajectory_public_layout_round_trip():
    raw = trajectory(outcome="done", states=[state(), state(step=1, action=None, thought=None)], source="x")
    t = Trajectory.from_record(raw, file="trajectories.jsonl", line=1)
    assert (t.id, t.layout, t.outcome, [s.step for s in t.states]) == ("t1", "states", "done", [0, 1])
    assert t.to_record() == raw


def test_state_key_preference_is_by_presence():
    raw = trajectory(states=[state(thought=None, thoughts="hidden", accessibility_tree=..., text="plain text")])
    s = Trajectory.from_record(raw, file="f", line=1).states[0]
    assert (s.thought, s.accessibility_tree) == (None, "plain text")
    assert dict(s.extra) == {"thoughts": "hidden"}  # kept, and upstream still prefers "thought"


@pytest.mark.parametrize("keys, expected", [
    ({"step": 5}, 5), ({"step": ..., "state_index": 7}, 7), ({"step": None, "state_index": 2}, 2),
    ({"step": ...}, 1),  # position of the second state
])
def test_step_rule(keys, expected):
    raw = trajectory(states=[state(), state(**keys)])
    assert Trajectory.from_record(raw, file="f", line=1).states[1].step == expected


def test_legacy_layout_is_read_and_written_back_in_the_public_layout():
    raw = {"id": "t9", "domain": "enterprise", "outcome": None, "metadata": {"original_goal": [" Close ", "", "INC1 "]},
           "content": [{"url": "http://d.test/1", "action": "a", "thoughts": "why",
                        "observation": {"text": "page one", "screenshot": "screenshots/t9/0.png"}},
                       {"url": "http://d.test/2", "action": None, "thoughts": None, "step": 4,
                        "observation": {"text": "page two", "screenshot": "screenshots/t9/1.png"}}]}
    t = Trajectory.from_record(raw, file="f", line=3)
    assert (t.layout, t.goal, t.start_url) == ("legacy", "Close INC1", "http://d.test/1")
    assert [(s.step, s.thought, s.accessibility_tree) for s in t.states] == [(0, "why", "page one"), (4, None, "page two")]
    again = Trajectory.from_record(t.to_record(), file="f", line=1)
    assert (again.layout, again.states, again.goal) == ("states", t.states, t.goal)


@pytest.mark.parametrize("raw, fld", [
    (trajectory(states=[state(), state(url="")]), "states[1].url"),
    (trajectory(states=[state(step=-1)]), "states[0].step"),
    (trajectory(states=[state(step=True)]), "states[0].step"),
    (trajectory(states=[state(step=..., state_index="3")]), "states[0].state_index"),
    (trajectory(states=[state(accessibility_tree=None)]), "states[0].accessibility_tree"),
    (trajectory(states=[state(accessibility_tree=...)]), "states[0].accessibility_tree"),
    (trajectory(states=[state(screenshot="../x.png")]), "states[0].screenshot"),
    (trajectory(states=[]), "states"),
    (trajectory(goal=["a", "b"]), "goal"),
    (trajectory(start_url=" "), "start_url"),
    (trajectory(domain="phone"), "domain"),
    (trajectory(outcome=1), "outcome"),
    ({"id": "t1", "domain": "web", "content": [{"url": "u", "observation": {"text": "x"}}], "metadata": {"original_goal": "g"}},
     "content[0].observation.screenshot"),
    ({"id": "t1", "domain": "web", "content": [{"url": "u", "observation": {"text": "x", "screenshot": "s.png"}}],
      "metadata": {}}, "metadata.original_goal"),
])
def test_trajectory_bad_fields(raw, fld):
    with pytest.raises(InputError) as err:
        Trajectory.from_record(raw, file="trajectories.jsonl", line=2)
    assert (err.value.problem.record, err.value.problem.field) == ("t1", fld)


def test_trajectories_are_streamed_line_by_line(tmp_path):
    path = tmp_path / "trajectories.jsonl"
    path.write_text(json.dumps(trajectory()) + "\n" + json.dumps(trajectory(id="t2")) + "\n{broken\n")
    stream = iter_trajectories(path)
    assert [next(stream).id, next(stream).id] == ["t1", "t2"]  # delivered before the broken line is read
    with pytest.raises(InputError) as err:
        next(stream)
    assert (err.value.problem.record, err.value.problem.field) == ("line 3", "<json>")


def test_duplicate_ids_raise_in_the_streams(tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps(trajectory()) + "\n" + json.dumps(trajectory()) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps(QUESTION) + "\n\n" + json.dumps(QUESTION) + "\n")
    with pytest.raises(InputError, match=r"duplicate trajectory id \(line 2\)"):
        list(iter_trajectories(tmp_path / "t.jsonl"))
    with pytest.raises(InputError, match=r"duplicate question id \(line 3\)"):
        list(iter_questions(tmp_path / "q.jsonl"))


# ------------------------------------------------------------------ haystacks


def test_haystack_shared_and_per_question():
    h = Haystack.from_record({"a": ["t1", "t2"], "b": ["t1", "t2"], "c": ["t2", "t1"]}, file="h.json")
    assert h["c"] == ("t2", "t1") and h.question_ids == ("a", "b", "c")
    assert h.is_shared(["a", "b"]) and not h.is_shared(["a", "c"]) and not h.is_shared([])
    assert h.to_record() == {"a": ["t1", "t2"], "b": ["t1", "t2"], "c": ["t2", "t1"]}
    assert haystack_file("medium") == "haystacks/lme_v2_medium.json"


@pytest.mark.parametrize("raw, record, fld", [
    ({"a": ["t1", "t1"]}, "a", "[1]"), ({"a": ["t1", ""]}, "a", "[1]"), ({"a": "t1"}, "a", "<list>"),
    ({"": ["t1"]}, "<empty key>", "<key>"), ([["t1"]], "<file>", "<file>"),
])
def test_haystack_bad_shapes(raw, record, fld):
    with pytest.raises(InputError) as err:
        Haystack.from_record(raw, file="h.json")
    assert (err.value.problem.record, err.value.problem.field) == (record, fld)


def test_haystack_key_given_twice_is_refused(tmp_path):
    (tmp_path / "h.json").write_text('{"a": ["t1"], "a": ["t2"]}')
    with pytest.raises(InputError, match="appears twice"):
        read_haystack(tmp_path / "h.json")


# ------------------------------------------------------------------ strict JSON


@pytest.mark.parametrize("data, record, says", [
    (b'\xef\xbb\xbf{"a": 1}\n', "line 1", "byte order mark"),
    (b'{"a": 1}\n{"a": "\xff"}\n', "line 2", "not UTF-8: byte 0xff"),
    ('{"a": "x\u2028y"}\n'.encode(), "line 1", "U+2028"),
    (b'{"a": NaN}\n', "line 1", "NaN"), (b'{"a": -Infinity}\n', "line 1", "-Infinity"),
    (b'{"a": 1e999}\n', "line 1", "infinity"), (b'{"a": 1, "a": 2}\n', "line 1", "twice"),
    (b'\n  \n', "<file>", "empty"), (b"", "<file>", "empty"), (b'{"a": 1}\n\n{"a": \n', "line 3", "not valid JSON"),
])
def test_strict_jsonl_problems(tmp_path, data, record, says):
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    problems = [i for i in scan_jsonl(path) if isinstance(i, Problem)]
    assert any(p.record == record and says in p.message for p in problems), problems


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\n  \n[2]\n')
    assert list(scan_jsonl(path)) == [Row(1, {"a": 1}), Row(4, [2])]


def test_load_json_refuses_bom_and_nan(tmp_path):
    (tmp_path / "a.json").write_bytes(b'\xef\xbb\xbf{"q": []}')
    (tmp_path / "b.json").write_bytes(b'{"q": [Infinity]}')
    assert load_json(tmp_path / "a.json")[0] is None and "byte order mark" in load_json(tmp_path / "a.json")[1][0].message
    assert "Infinity" in load_json(tmp_path / "b.json")[1][0].message
    assert load_json(tmp_path / "missing.json")[1][0].message == "does not exist"


@pytest.mark.parametrize("value, ok", [
    ("screenshots/t1/0.png", True), ("a/./b.png", True), ("a..b/c.png", True), ("../a.png", False),
    ("a/../../b.png", False), ("a/../b.png", False), ("/abs.png", False), ("C:\\x.png", False), ("a\\..\\b", False),
])
def test_data_path_rule(value, ok):
    assert (data_path_problem(value) is None) is ok


texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1).filter(str.strip)


@given(qid=texts, question=texts, answer=st.text(), extra=st.dictionaries(st.sampled_from(["x", "meta"]), st.integers()))
def test_question_round_trip_property(qid, question, answer, extra):
    raw = QUESTION | {"id": qid, "question": question, "answer": answer} | extra
    raw.pop("note")
    assert Question.from_record(raw, file="f", line=1).to_record() == raw
