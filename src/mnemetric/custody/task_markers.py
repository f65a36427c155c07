"""``@pytest.mark.task(family, task)`` markers, read from test files with :mod:`ast` (never imported or run).

A test declares the upstream task it exercises with ``@pytest.mark.task("longmemeval", "multi-session")``
(family = the benchmark name in lower case; task = the task name of the inventory), on a test function,
on a ``Test*`` class, or in a module- or class-level ``pytestmark``. The marker is registered by the
pytest plug-in ``tests/inventory_markers.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

from mnemetric.errors import ConfigError, InputError



def _is_task_mark(node: ast.expr) -> bool:
    """``pytest.mark.task`` or ``mark.task`` (called or not)."""
    func = node.func if isinstance(node, ast.Call) else node
    if not (isinstance(func, ast.Attribute) and func.attr == "task"):
        return False
    inner = func.value
    return ((isinstance(inner, ast.Attribute) and inner.attr == "mark"
             and isinstance(inner.value, ast.Name) and inner.value.id == "pytest")
            or (isinstance(inner, ast.Name) and inner.id == "mark"))


def _marks_in(exprs: Sequence[ast.expr], file: str) -> list[tuple[str, str]]:
    found = []
    for node in exprs:
        if not _is_task_mark(node):
            continue
        args = node.args if isinstance(node, ast.Call) else []
        ok = (isinstance(node, ast.Call) and len(args) == 2 and not node.keywords
              and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args))
        if not ok:
            raise InputError(file, f"line {node.lineno}", "pytest.mark.task",
                             "expects exactly two string literals (family, task)",
                             fix='write @pytest.mark.task("longmemeval", "multi-session")')
        found.append((args[0].value, args[1].value))
    return found


def _pytestmark(body: Sequence[ast.stmt], file: str) -> list[tuple[str, str]]:
    marks = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            value = stmt.value
            marks += _marks_in(value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value], file)
    return marks


def _collect_body(body: Sequence[ast.stmt], prefix: str, inherited: list[tuple[str, str]], file: str,
                  out: dict[tuple[str, str], list[str]]) -> None:
    marks_here = inherited + _pytestmark(body, file)
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
            for key in dict.fromkeys(marks_here + _marks_in(stmt.decorator_list, file)):
                out.setdefault(key, []).append(f"{prefix}::{stmt.name}")
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            _collect_body(stmt.body, f"{prefix}::{stmt.name}", marks_here + _marks_in(stmt.decorator_list, file),
                          file, out)


def collect_task_markers(tests_dir: str | Path, *, root: str | Path | None = None) -> dict[tuple[str, str], list[str]]:
    """(family, task) -> test refs ``tests/<path>.py::[Class::]test_name``, from ``@pytest.mark.task``.

    Reads every ``test_*.py`` under ``tests_dir`` with :mod:`ast`: decorators on test functions and
    ``Test*`` classes, and ``pytestmark`` at module or class level. Refs are relative to ``root``
    (default: the parent of ``tests_dir``). A file that does not parse, or a marker that is not two
    string literals, is an InputError.
    """
    tests_dir = Path(tests_dir)
    if not tests_dir.is_dir():
        raise ConfigError("tests_dir", f"{tests_dir} is not a folder", fix="name the project's tests folder")
    base = Path(root) if root is not None else tests_dir.parent
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(tests_dir.rglob("test_*.py")):
        rel = path.relative_to(base).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        except (SyntaxError, UnicodeDecodeError) as exc:
            line = getattr(exc, "lineno", None)
            raise InputError(rel, f"line {line}" if line else "<file>", "<python>", f"cannot be parsed: {exc}") from None
        _collect_body(tree.body, rel, [], rel, out)
    return out


MARKERS_FILE = "data/inventory/task-markers.json"
"""The committed index of the tests' task markers: what stage ``inventory`` reads instead of tests/ (so
editing a test that carries no marker change reruns no stage). ``mnemetric inventory markers`` writes it;
``tests/inventory/test_markers_index.py`` keeps it equal to :func:`collect_task_markers` of tests/."""

MARKERS_FIX = "run `mnemetric inventory markers` (it rewrites data/inventory/task-markers.json from tests/)"

_SOURCE = "@pytest.mark.task markers of tests/ (read with ast by `mnemetric inventory markers`)"


def markers_document(markers: dict[tuple[str, str], list[str]]) -> dict:
    """The index's JSON document: one entry per (family, task), sorted, each with its test refs in file order."""
    return {"source": _SOURCE,
            "markers": [{"family": family, "task": task, "tests": list(refs)}
                        for (family, task), refs in sorted(markers.items())]}


def write_markers(path: str | Path, markers: dict[tuple[str, str], list[str]]) -> None:
    """Write the index (atomically)."""
    from mnemetric.io import write_json_atomic
    write_json_atomic(path, markers_document(markers))


def read_markers(path: str | Path) -> dict[tuple[str, str], list[str]]:
    """The index written by :func:`write_markers`, as :func:`collect_task_markers` returns it; a missing
    file or a malformed entry is an InputError naming the file, the entry and the field."""
    from mnemetric.records import Fields, read_json_file
    file = str(path)
    raw_doc = read_json_file(path, missing_fix=MARKERS_FIX, fix=MARKERS_FIX)
    doc = Fields.of(raw_doc, file=file, record="<file>", fix=MARKERS_FIX).only(("source", "markers"))
    out: dict[tuple[str, str], list[str]] = {}
    for i, raw in enumerate(doc.array("markers")):
        entry = Fields.of(raw, file=file, record=f"markers[{i}]", fix=MARKERS_FIX).only(("family", "task", "tests"))
        key = (entry.string("family"), entry.string("task"))
        if key in out:
            raise entry.error("task", f"{key[0]}/{key[1]} is listed twice")
        out[key] = list(entry.strings("tests"))
    return out
