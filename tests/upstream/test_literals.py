"""The parse-only string-literal reader: exact values, refusals, and proof that nothing runs."""

from __future__ import annotations

import os
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemetric.errors import UpstreamFormatError
from mnemetric.upstream import literals as lit
from mnemetric.upstream.literals import Field, Template
from tests.support.standin_v2 import no_execution

# Running this source would write a file, print, and stop the interpreter.
HOSTILE = textwrap.dedent('''\
    import os
    import not_a_real_package_anywhere
    open("WAS_EXECUTED", "w").write("yes")
    os.system("touch WAS_EXECUTED_TOO")
    raise SystemExit("executed!")

    GREETING = "tab\\there, bell\\a, back\\bspace"
    JOINED = ("one "
              "two " 'three')
    PLUS = "a" + "b" + "c"
    TABLE = {"x": "first", "y": ("sec" "ond")}
    CALLED = {"x": os.getcwd()}
    BUILT = "-".join(["a", "b"])
    NUMBER = 3
    TWICE = "one"
    TWICE = "two"
    RAW = r"\\boxed{}"

    def greet(name, items):
        head = "Hello\\n"
        if not items:
            head += "(none)"
        tail = f"Bye {name}!"
        loud = f"{name!r}"
        spec = f"{name:>10}"
        attr = f"{items.first}"
        return head

    def answer():
        return "forty" "-two"

    def answer_via_name():
        text = "via a name"
        return text

    def two_returns(flag):
        if flag:
            return "a"
        return "b"

    def not_literal():
        return os.getcwd()
    ''')


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with no_execution():
        yield lit.parse(HOSTILE, "hostile.py")
    assert not (tmp_path / "WAS_EXECUTED").exists() and not (tmp_path / "WAS_EXECUTED_TOO").exists()


def test_the_hostile_source_really_would_run_things(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    body = HOSTILE.replace("import not_a_real_package_anywhere\n", "").replace('os.system("touch WAS_EXECUTED_TOO")\n', "")
    with pytest.raises(SystemExit, match="executed!"):
        exec(compile(body, "hostile.py", "exec"), {"__name__": "hostile"})  # noqa: S102 - the control experiment
    assert (tmp_path / "WAS_EXECUTED").exists()


def test_escapes_are_evaluated_as_python_does(tree):
    assert lit.module_string(tree, "GREETING", "f") == "tab" + chr(9) + "here, bell" + chr(7) + ", back" + chr(8) + "space"
    assert lit.module_string(tree, "RAW", "f") == "\\" + "boxed{}"


def test_concatenations(tree):
    assert lit.module_string(tree, "JOINED", "f") == "one two three"
    assert lit.module_string(tree, "PLUS", "f") == "abc"
    assert lit.module_string_dict(tree, "TABLE", "f") == {"x": "first", "y": "second"}


@pytest.mark.parametrize("name, word", [
    ("CALLED", "not a dict of string literals"), ("BUILT", "not a string literal"),
    ("NUMBER", "not a string literal"), ("TWICE", "found 2"), ("ABSENT", "found 0"),
])
def test_non_literals_and_ambiguity_are_refused(tree, name, word):
    reader = lit.module_string_dict if name == "CALLED" else lit.module_string
    with pytest.raises(UpstreamFormatError, match=word) as info:
        reader(tree, name, "hostile.py")
    assert "hostile.py" in str(info.value)


def test_function_locals(tree):
    greet = lit.find_function(tree, "greet", "f")
    assert lit.local_string(greet, "head", "f") == "Hello\n"
    assert lit.local_string(greet, "head", "f", augmented=True) == "(none)"
    assert lit.local_template(greet, "tail", "f") == Template(("Bye ", Field("name"), "!"))


@pytest.mark.parametrize("name", ["loud", "spec", "attr"])
def test_fstrings_with_conversions_specs_or_expressions_are_refused(tree, name):
    with pytest.raises(UpstreamFormatError, match=name):
        lit.local_template(lit.find_function(tree, "greet", "f"), name, "f")


def test_returned_literals(tree):
    assert lit.returned_string(tree, "answer", "f") == "forty-two"
    assert lit.returned_string(tree, "answer_via_name", "f") == "via a name"
    with pytest.raises(UpstreamFormatError, match="one return statement; found 2"):
        lit.returned_string(tree, "two_returns", "f")
    with pytest.raises(UpstreamFormatError, match="does not return a string literal"):
        lit.returned_string(tree, "not_literal", "f")
    with pytest.raises(UpstreamFormatError, match="found 0"):
        lit.find_function(tree, "missing", "f")


def test_syntax_error_names_the_file():
    with pytest.raises(UpstreamFormatError, match=r"broken\.py: cannot parse"):
        lit.parse("def (:\n", "broken.py")


def test_template_fill_and_record():
    t = Template(("A ", Field("x"), " and ", Field("y"), "."))
    assert t.fields == ("x", "y") and not t.is_plain
    assert t.fill({"x": "{1}", "y": "%s"}) == "A {1} and %s."  # values are inserted as they are
    assert t.to_record() == ["A ", {"field": "x"}, " and ", {"field": "y"}, "."]
    with pytest.raises(ValueError, match="missing"):
        t.fill({"x": "1"})
    with pytest.raises(ValueError, match="unexpected"):
        t.fill({"x": "1", "y": "2", "z": "3"})
    with pytest.raises(TypeError):
        t.fill({"x": 1, "y": "2"})


def test_implicit_fstring_concatenation_merges_text(tmp_path):
    tree = lit.parse('def f(a, b):\n    s = ("x" f"{a}" "y" "z" f"{b}" "")\n    return s\n', "g.py")
    assert lit.local_template(lit.find_function(tree, "f", "g.py"), "s", "g.py").parts == ("x", Field("a"), "yz", Field("b"))


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(TEXT, TEXT)
def test_any_string_literal_round_trips(a, b):
    """Second method: repr() writes a literal Python reads back as the same string."""
    tree = lit.parse(f"X = {a!r} {b!r}\nY = {a!r} + {b!r}\n", "p.py")
    assert lit.module_string(tree, "X", "p.py") == a + b == lit.module_string(tree, "Y", "p.py")


@given(TEXT, TEXT, TEXT)
def test_fstring_fill_equals_python_fstring(a, b, value):
    """Second method: Python's own f-string evaluation of the same source (this test's code, not upstream's)."""
    source = f"def f(name):\n    s = {a!r} f'{{name}}' {b!r}\n    return s\n"
    tree = lit.parse(source, "q.py")
    template = lit.local_template(lit.find_function(tree, "f", "q.py"), "s", "q.py")
    namespace: dict = {}
    exec(compile(source, "q.py", "exec"), namespace)  # noqa: S102 - our own generated source
    assert template.fill({"name": value}) == namespace["f"](value)


def test_no_execution_guard_really_blocks():
    with no_execution():
        with pytest.raises(AssertionError):
            exec("1")  # noqa: S102
        with pytest.raises(AssertionError):
            compile("1", "x", "exec")
        assert os.getcwd()  # ordinary code still works
