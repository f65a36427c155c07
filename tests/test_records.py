"""The record-checking kit (mnemetric.records): each getter's accepted and refused values, worked by
hand; every refusal is an InputError naming file, record and field (with the view's prefix) in the
kit's wording; a JSON true is never an integer or a number."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import InputError
from mnemetric.records import (
    INTEGER,
    OBJECT,
    OPTIONAL_NUMBER,
    STRING,
    Fields,
    is_kind,
    read_json_file,
    record_name,
    type_error,
)

FIX = "rebuild it"


def view(**raw) -> Fields:
    return Fields.of(raw, file="f.json", record="line 4 (q1)", prefix="top.", fix=FIX)


def refused(getter: str, value, *args) -> InputError:
    with pytest.raises(InputError) as err:
        getattr(view(x=value), getter)("x", *args)
    return err.value


@pytest.mark.parametrize("getter, value", [
    ("string", ""), ("string", "é"),
    ("optional_string", None), ("optional_string", "a"),
    ("integer", 0), ("integer", -3), ("integer", 10**20),
    ("optional_integer", None), ("optional_integer", 7),
    ("count", 0), ("count", 5),
    ("number", 1), ("number", -0.5),
    ("optional_number", None), ("optional_number", 2.5),
    ("amount", 0), ("amount", 0.25),
    ("boolean", True), ("boolean", False),
    ("array", []), ("array", [1, "a", None]),
])
def test_accepted_values_come_back_unchanged(getter, value):
    got = getattr(view(x=value), getter)("x")
    assert got == value and type(got) is type(value)


def test_strings_come_back_as_a_tuple():
    assert view(x=["a", ""]).strings("x") == ("a", "")
    assert view(x=[]).strings("x") == ()


@pytest.mark.parametrize("getter, value, message", [
    ("string", 3, "expected a string, got int 3"),
    ("string", None, "expected a string, got NoneType None"),
    ("optional_string", 1.5, "expected a string or null, got float 1.5"),
    ("integer", 1.0, "expected an integer, got float 1.0"),
    ("integer", "7", "expected an integer, got str '7'"),
    ("optional_integer", [], "expected an integer or null, got list []"),
    ("count", -1, "expected a non-negative integer, got int -1"),
    ("count", 2.0, "expected a non-negative integer, got float 2.0"),
    ("number", "1", "expected a number, got str '1'"),
    ("optional_number", {}, "expected a number or null, got dict {}"),
    ("amount", -0.01, "expected a non-negative number, got float -0.01"),
    ("amount", math.inf, "expected a non-negative number, got float inf"),
    ("amount", math.nan, "expected a non-negative number, got float nan"),
    ("boolean", 1, "expected true or false, got int 1"),
    ("boolean", "true", "expected true or false, got str 'true'"),
    ("array", "abc", "expected a list, got str 'abc'"),
    ("array", {"a": 1}, "expected a list, got dict {'a': 1}"),
    ("strings", ["a", 2], "expected a list of strings, got list ['a', 2]"),
    ("strings", "ab", "expected a list of strings, got str 'ab'"),
])
def test_refused_values_name_file_record_and_field(getter, value, message):
    err = refused(getter, value)
    assert (err.problem.file, err.problem.record, err.problem.field, err.problem.message) == \
        ("f.json", "line 4 (q1)", "top.x", message)
    assert err.fix == FIX
    assert str(err) == f"f.json: line 4 (q1): field 'top.x': {message}\n  fix: {FIX}"


@pytest.mark.parametrize("getter", ["integer", "optional_integer", "count", "number", "optional_number", "amount"])
@pytest.mark.parametrize("value", [True, False])
def test_a_json_true_or_false_is_never_a_number(getter, value):
    err = refused(getter, value)
    assert err.problem.message.endswith(f"got bool {value}")


@pytest.mark.parametrize("getter", ["string", "integer", "count", "amount", "boolean", "array", "strings"])
def test_a_missing_field_is_missing(getter):
    with pytest.raises(InputError) as err:
        getattr(view(y=1), getter)("x")
    assert (err.value.problem.field, err.value.problem.message) == ("top.x", "missing")


def test_a_long_value_is_cut_at_sixty_characters():
    err = refused("integer", "z" * 100)
    assert err.problem.message == "expected an integer, got str '" + "z" * 59


def test_the_wording_of_a_custom_list():
    assert refused("array", 1, "a list of context items").problem.message == \
        "expected a list of context items, got int 1"


@pytest.mark.parametrize("raw, field", [([1], "<record>"), ("x", "<record>"), (None, "<record>")])
def test_a_record_that_is_not_an_object(raw, field):
    with pytest.raises(InputError) as err:
        Fields.of(raw, file="f.json", record="line 2", fix=FIX)
    assert (err.value.problem.record, err.value.problem.field, err.value.problem.message) == \
        ("line 2", field, f"expected a JSON object, got {type(raw).__name__}")


def test_a_nested_record_that_is_not_an_object_names_its_prefix_or_the_given_field():
    with pytest.raises(InputError) as err:
        Fields.of(3, file="f", record="line 1", prefix="items[2].")
    assert err.value.problem.field == "items[2]"
    with pytest.raises(InputError) as err:
        Fields.of(3, file="f", record="line 1", prefix="items[2].", field="the item")
    assert err.value.problem.field == "the item"


def test_at_opens_a_sub_object_with_a_longer_prefix():
    inner = view(params={"n": 1, "t": "x"}).at("params")
    assert (inner.prefix, inner.record, inner.fix, inner.integer("n")) == ("top.params.", "line 4 (q1)", FIX, 1)
    with pytest.raises(InputError) as err:
        inner.integer("t")
    assert err.value.problem.field == "top.params.t"


def test_at_words_a_wrong_type_by_kind_or_as_a_json_object():
    with pytest.raises(InputError) as err:
        view(p=[0]).at("p")
    assert (err.value.problem.field, err.value.problem.message) == ("top.p", "expected a JSON object, got list")
    with pytest.raises(InputError) as err:
        view(p=[0]).at("p", OBJECT)
    assert (err.value.problem.field, err.value.problem.message) == ("top.p", "expected an object, got list [0]")
    for kind in (None, OBJECT):
        with pytest.raises(InputError) as err:
            view().at("p", kind)
        assert (err.value.problem.field, err.value.problem.message) == ("top.p", "missing")


def test_error_uses_the_view_fix_unless_given_one():
    f = view()
    assert f.error("k", "bad").fix == FIX and f.error("k", "bad", fix="other").fix == "other"
    assert f.error("k", "bad").problem.field == "top.k"


def test_record_name():
    assert (record_name(3), record_name("<file>")) == ("line 3", "<file>")


def test_type_error_wording():
    assert type_error(None, "a string") == "expected a string, got NoneType None"


def _naive_is_kind(value, kinds) -> bool:
    """Second implementation: JSON types by name; bool counts only where bool is asked for."""
    name = type(value).__name__
    wanted = {k.__name__ for k in kinds}
    if name == "bool":
        return "bool" in wanted
    if name == "int":
        return "int" in wanted
    return name in wanted


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=3), max_leaves=5)
kinds = st.lists(st.sampled_from([str, int, float, bool, list, type(None)]), min_size=1, max_size=3, unique=True)


@given(json_values, kinds)
def test_is_kind_agrees_with_a_naive_reading(value, accepted):
    assert is_kind(value, tuple(accepted)) == _naive_is_kind(value, accepted)


def test_read_json_file(tmp_path: Path):
    good = tmp_path / "a.json"
    good.write_text(json.dumps({"a": [1]}), encoding="utf-8")
    assert read_json_file(good, missing_fix="make it") == {"a": [1]}
    bad = tmp_path / "b.json"
    bad.write_text('{\n  "a": 1,\n}', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_json_file(bad, missing_fix="make it", fix=FIX)
    assert (err.value.problem.file, err.value.problem.record, err.value.problem.field) == (str(bad), "line 3", "<json>")
    assert err.value.problem.message.startswith("not valid JSON (") and err.value.fix == FIX
    with pytest.raises(InputError) as err:
        read_json_file(tmp_path / "none.json", missing_fix="make it")
    assert (err.value.problem.message, err.value.fix) == ("does not exist", "make it")


# ------------------------------------------------------------------ the display readers' rule


def test_a_display_view_of_no_file_is_empty_and_of_a_non_object_an_error():
    assert Fields.shown(None, file="m.json").raw == {}
    with pytest.raises(InputError) as err:
        Fields.shown([1], file="m.json")
    assert (err.value.problem.file, err.value.problem.field) == ("m.json", "<record>")


def test_maybe_is_none_for_absent_or_null_and_refuses_a_wrong_type():
    v = view(a=None, b=3, c="3")
    assert (v.maybe("a", OPTIONAL_NUMBER), v.maybe("missing", STRING), v.maybe("b", INTEGER)) == (None, None, 3)
    with pytest.raises(InputError, match="field 'top.c': expected an integer, got str '3'"):
        v.maybe("c", INTEGER)
    with pytest.raises(InputError, match="field 'top.t': expected an integer, got bool True"):
        view(t=True).maybe("t", INTEGER)


def test_within_is_an_empty_view_for_absent_or_null_and_names_the_nested_field():
    v = view(a=None, b={"c": {"d": "x"}}, e=[1])
    assert v.within("a").raw == {} and v.within("missing").within("deeper").maybe("k", STRING) is None
    assert v.within("b").within("c").maybe("d", STRING) == "x"
    with pytest.raises(InputError, match="field 'top.b.c.d': expected an integer"):
        v.within("b").within("c").maybe("d", INTEGER)
    with pytest.raises(InputError, match="field 'top.e': expected a JSON object, got list"):
        v.within("e")


def test_maybe_strings():
    v = view(a=None, b=["x", "y"], c=["x", 1], d="x")
    assert (v.maybe_strings("a"), v.maybe_strings("missing"), v.maybe_strings("b")) == (None, None, ("x", "y"))
    for name in ("c", "d"):
        with pytest.raises(InputError, match=f"field 'top.{name}': expected a list of strings"):
            v.maybe_strings(name)
