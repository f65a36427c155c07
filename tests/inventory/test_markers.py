"""collect_task_markers: @pytest.mark.task read from test files with ast (worked examples, a naive model)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.custody.inventory import collect_task_markers
from mnemetric.errors import ConfigError, InputError


def write(root: Path, rel: str, source: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


WORKED = '''
    import pytest
    from pytest import mark

    pytestmark = pytest.mark.task("longmemeval", "abstention")


    @pytest.mark.task("longmemeval", "multi-session")
    @pytest.mark.parametrize("x", [1, 2])
    def test_one(x):
        pass


    def test_two():
        pass


    @mark.task("longmemeval-v2", "Static state recall")
    async def test_three():
        pass


    @pytest.mark.task("longmemeval", "multi-session")
    def helper_not_a_test():
        pass


    @pytest.mark.task("longmemeval", "knowledge-update")
    class TestGroup:
        pytestmark = [pytest.mark.slow, pytest.mark.task("longmemeval", "temporal-reasoning")]

        @pytest.mark.task("longmemeval", "multi-session")
        def test_inner(self):
            pass

        def not_collected(self):
            pass

        class TestNested:
            def test_deep(self):
                pass


    @pytest.mark.task("longmemeval", "single-session-user")
    class Helper:
        def test_in_a_non_test_class(self):
            pass
'''


def test_worked_example(tmp_path):
    write(tmp_path, "tests/scoring/test_worked.py", WORKED)
    write(tmp_path, "tests/scoring/helpers.py", '@pytest.mark.task("longmemeval", "abstention")\ndef test_x(): pass\n')
    f = "tests/scoring/test_worked.py"
    assert collect_task_markers(tmp_path / "tests") == {
        ("longmemeval", "abstention"): [f"{f}::test_one", f"{f}::test_two", f"{f}::test_three",
                                        f"{f}::TestGroup::test_inner", f"{f}::TestGroup::TestNested::test_deep"],
        ("longmemeval", "multi-session"): [f"{f}::test_one", f"{f}::TestGroup::test_inner"],
        ("longmemeval-v2", "Static state recall"): [f"{f}::test_three"],
        ("longmemeval", "knowledge-update"): [f"{f}::TestGroup::test_inner", f"{f}::TestGroup::TestNested::test_deep"],
        ("longmemeval", "temporal-reasoning"): [f"{f}::TestGroup::test_inner",
                                                f"{f}::TestGroup::TestNested::test_deep"],
    }


def test_files_in_sorted_order_refs_relative_to_root(tmp_path):
    for rel in ("tests/b/test_z.py", "tests/a/test_y.py", "tests/test_x.py"):
        write(tmp_path, rel, '@pytest.mark.task("longmemeval", "abstention")\ndef test_it():\n    pass\n')
    assert collect_task_markers(tmp_path / "tests") == {("longmemeval", "abstention"): [
        "tests/a/test_y.py::test_it", "tests/b/test_z.py::test_it", "tests/test_x.py::test_it"]}
    assert collect_task_markers(tmp_path / "tests", root=tmp_path / "tests") == {("longmemeval", "abstention"): [
        "a/test_y.py::test_it", "b/test_z.py::test_it", "test_x.py::test_it"]}


def test_a_module_without_markers_and_strings_that_look_like_markers(tmp_path):
    write(tmp_path, "tests/test_plain.py", '''
        SOURCE = '@pytest.mark.task("longmemeval", "abstention")'

        def test_it():
            assert "pytest.mark.task" in SOURCE
    ''')
    assert collect_task_markers(tmp_path / "tests") == {}


@pytest.mark.parametrize("decorator, line", [
    ('@pytest.mark.task("longmemeval")', 3),
    ('@pytest.mark.task("longmemeval", "multi-session", "extra")', 3),
    ('@pytest.mark.task(FAMILY, "multi-session")', 3),
    ('@pytest.mark.task("longmemeval", task="multi-session")', 3),
    ('@pytest.mark.task', 3),
    ('@pytest.mark.task("longmemeval", 5)', 3),
])
def test_a_marker_that_is_not_two_string_literals_is_an_error(tmp_path, decorator, line):
    write(tmp_path, "tests/test_bad.py", f"import pytest\n\n{decorator}\ndef test_it():\n    pass\n")
    with pytest.raises(InputError) as err:
        collect_task_markers(tmp_path / "tests")
    problem = err.value.problem
    assert (problem.file, problem.record, problem.field) == ("tests/test_bad.py", f"line {line}", "pytest.mark.task")


def test_a_file_that_does_not_parse_is_an_error(tmp_path):
    write(tmp_path, "tests/test_broken.py", "def test_it(:\n    pass\n")
    with pytest.raises(InputError) as err:
        collect_task_markers(tmp_path / "tests")
    assert (err.value.problem.file, err.value.problem.record) == ("tests/test_broken.py", "line 1")


def test_a_missing_tests_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        collect_task_markers(tmp_path / "nope")


def test_the_marker_is_registered_for_strict_markers(request):
    """With --strict-markers (pyproject addopts) an unregistered ``pytest.mark.task`` raises here."""
    assert any(line.startswith("task(family, task):") for line in request.config.getini("markers"))
    mark = pytest.mark.task("longmemeval", "multi-session")
    assert (mark.name, mark.args) == ("task", ("longmemeval", "multi-session"))


# A naive model: tests as plain data, rendered to source; the expected mapping computed without ast.
TASKS = [("longmemeval", "multi-session"), ("longmemeval", "abstention"), ("longmemeval-v2", "Premise awareness")]
marks = st.lists(st.sampled_from(TASKS), max_size=2)
function = st.tuples(st.sampled_from(["test_", "helper_"]), marks)
klass = st.tuples(st.sampled_from(["Test", "Helper"]), marks, st.lists(function, max_size=3))
module = st.tuples(marks, st.lists(st.one_of(function, klass), max_size=5))


def deco(ms, indent=""):
    return "".join(f'{indent}@pytest.mark.task("{f}", "{t}")\n' for f, t in ms)


def render(mod) -> str:
    module_marks, items = mod
    out = ["import pytest", f"pytestmark = [{', '.join(f'pytest.mark.task({f!r}, {t!r})' for f, t in module_marks)}]"]
    for i, item in enumerate(items):
        if len(item) == 2:
            prefix, ms = item
            out.append(f"{deco(ms)}def {prefix}{i}():\n    pass")
        else:
            prefix, ms, methods = item
            body = "".join(f"{deco(mm, '    ')}    def {p}{j}(self):\n        pass\n" for j, (p, mm) in enumerate(methods))
            out.append(f"{deco(ms)}class {prefix}{i}:\n    x = 1\n{body}")
    return "\n\n".join(out) + "\n"


def expected(mod, rel) -> dict:
    module_marks, items = mod
    result: dict = {}

    def add(ms, ref):
        for key in dict.fromkeys(ms):
            result.setdefault(key, []).append(ref)
    for i, item in enumerate(items):
        if len(item) == 2:
            if item[0] == "test_":
                add(module_marks + item[1], f"{rel}::test_{i}")
        elif item[0] == "Test":
            for j, (p, mm) in enumerate(item[2]):
                if p == "test_":
                    add(module_marks + item[1] + mm, f"{rel}::Test{i}::test_{j}")
    return result


@settings(max_examples=60, deadline=None)
@given(module)
def test_property_against_a_naive_model(tmp_path_factory, mod):
    root = tmp_path_factory.mktemp("markers")
    write(root, "tests/test_gen.py", render(mod))
    assert collect_task_markers(root / "tests") == expected(mod, "tests/test_gen.py")
