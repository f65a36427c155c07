"""The eval_function spec is parsed in one place (checkers.split_eval_function / parse_spec_value);
questions.EvalSpec only adds option checks. Property tests compare the typing with a naive reading of
upstream's rule (qa_eval_metrics.py _parse_eval_value @ be15ea6) written here, and EvalSpec with
parse_eval_function on random specs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import ConfigError
from mnemetric.longmemeval_v2 import checkers, questions
from mnemetric.longmemeval_v2.questions import EVAL_FUNCTIONS, EvalSpec, SpecError


def naive_value(key: str, value: str) -> Any:
    if value.lower() == "true":
        return True
    if value.lower() == "false":
        return False
    if value.lower() == "none" or value.lower() == "null":
        return None
    if key == "separators" or key == "separator":
        if value == "":
            return []
        if value[:1] == "[" and value[-1:] == "]":
            return json.loads(value)
        return [ch for ch in value if ch.strip() != ""]
    if "." in value:
        try:
            return float(value)
        except ValueError:
            return value
    try:
        return int(value)
    except ValueError:
        return value


def test_one_typing_function_and_one_checker_table():
    assert questions.parse_spec_value is checkers.parse_spec_value
    assert questions.SpecError is checkers.SpecError
    assert set(EVAL_FUNCTIONS) == checkers.KNOWN_CHECKERS


@pytest.mark.parametrize("key, value, expected", [
    ("lower", "TRUE", True), ("x", "False", False), ("x", "NULL", None), ("x", "none", None),
    ("x", "1.5", 1.5), ("x", "-3", -3), ("x", "1.2.3", "1.2.3"), ("x", "abc", "abc"), ("x", "", ""),
    ("separators", "", []), ("separator", ", ;", [",", ";"]), ("separators", '["a", "b"]', ["a", "b"]),
    ("separators", "true", True), ("x", "1_000", 1000), ("x", ".5", 0.5), ("x", "inf", "inf"), ("x", "1e3", "1e3"),
])
def test_value_typing_by_hand(key, value, expected):
    got = checkers.parse_spec_value(key, value)
    assert got == expected and type(got) is type(expected)


def test_a_bad_json_list_is_a_spec_error_in_both_doors():
    with pytest.raises(SpecError, match="is not a JSON list"):
        EvalSpec.parse("norm_phrase_set_match|separators=[bad]")
    with pytest.raises(ConfigError, match="is not a JSON list"):
        checkers.parse_eval_function("norm_phrase_set_match|separators=[bad]")


keys = st.sampled_from(["separators", "separator", "lower", "strip_chars", "x", "require_non_empty"])
values = st.one_of(st.sampled_from(["", "true", "FALSE", "Null", "none", "1", "0", "-2", "1.5", "1.2.3", ".",
                                    "[]", '[","]', "[x]", ", ;", "a b", "nan", "1_0"]),
                   st.text(alphabet=" ab1.,;[]\"-eE\t", max_size=6))


@given(keys, values)
def test_value_typing_equals_a_naive_reading(key, value):
    value = value.strip()
    try:
        expected = naive_value(key, value)
    except json.JSONDecodeError:
        with pytest.raises(SpecError):
            checkers.parse_spec_value(key, value)
        return
    got = checkers.parse_spec_value(key, value)
    assert repr(got) == repr(expected)  # repr: nan == nan, and 1 vs 1.0 vs True are told apart


names = st.sampled_from(sorted(checkers.KNOWN_CHECKERS) + ["", "nope"])
parts = st.one_of(st.tuples(keys, st.sampled_from(["=", " = "]), values).map("".join),
                  st.sampled_from(["", " ", "novalue", "=1"]))


@given(names, st.lists(parts, max_size=4))
def test_eval_spec_and_parse_eval_function_agree(name, rest):
    spec = "|".join([name, *rest])
    try:
        expected = checkers.parse_eval_function(spec)
    except ConfigError:
        with pytest.raises(SpecError):
            EvalSpec.parse(spec)
        return
    try:
        parsed = EvalSpec.parse(spec)
    except SpecError as exc:  # only the option checks may refuse what the parser accepts
        assert "option" in str(exc) or "takes no option" in str(exc)
        return
    assert (parsed.name, repr(parsed.options)) == (expected[0], repr(tuple(expected[1].items())))
