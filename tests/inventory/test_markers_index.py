"""The committed index of the tests' task markers (data/inventory/task-markers.json): equal to tests/, and the
`mnemetric inventory markers` door that writes and checks it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.custody.task_markers import MARKERS_FILE, collect_task_markers, read_markers, write_markers
from mnemetric.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

MARKED = '''
    import pytest

    @pytest.mark.task("longmemeval", "multi-session")
    def test_a():
        pass
'''


def test_the_committed_index_equals_the_markers_of_tests():
    """Stage inventory reads the index, not tests/: a marker added, moved or removed without
    `mnemetric inventory markers` fails here (the fix is that command)."""
    assert read_markers(ROOT / MARKERS_FILE) == collect_task_markers(ROOT / "tests", root=ROOT), \
        "data/inventory/task-markers.json is stale: run `mnemetric inventory markers`"


def test_write_then_read_is_the_identity(tmp_path):
    markers = {("longmemeval-v2", "Static state recall"): ["tests/v2/test_a.py::TestB::test_c"],
               ("longmemeval", "abstention"): ["tests/b.py::test_x", "tests/a.py::test_y"]}
    write_markers(tmp_path / "m.json", markers)
    assert read_markers(tmp_path / "m.json") == markers
    doc = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert [(m["family"], m["task"]) for m in doc["markers"]] == sorted(markers)  # sorted: stable bytes
    assert doc["markers"][0]["tests"] == ["tests/b.py::test_x", "tests/a.py::test_y"]  # refs keep file order


def project(tmp_path: Path, source: str = MARKED) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return tmp_path


def test_cli_writes_the_index_and_check_passes_then_fails_when_a_marker_changes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(project(tmp_path))
    assert main(["inventory", "markers"]) == 0
    assert read_markers(MARKERS_FILE) == {("longmemeval", "multi-session"): ["tests/test_m.py::test_a"]}
    assert main(["inventory", "markers", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
    (tmp_path / "tests" / "test_m.py").write_text(textwrap.dedent(MARKED.replace("multi-session", "abstention")),
                                                  encoding="utf-8")
    before = (tmp_path / MARKERS_FILE).read_bytes()
    assert main(["inventory", "markers", "--check"]) == 1
    err = capsys.readouterr().err
    assert "longmemeval/abstention" in err and "longmemeval/multi-session" in err
    assert "stale" in err and "mnemetric inventory markers" in err
    assert (tmp_path / MARKERS_FILE).read_bytes() == before  # --check writes nothing


def test_a_missing_index_names_the_command_that_writes_it(tmp_path):
    with pytest.raises(InputError, match="(?s)task-markers.json.*mnemetric inventory markers"):
        read_markers(tmp_path / "data" / "inventory" / "task-markers.json")


@pytest.mark.parametrize("doc, record, field", [
    ({"markers": [{"family": "longmemeval", "task": 3, "tests": []}]}, "markers[0]", "task"),
    ({"markers": [{"family": "longmemeval", "task": "abstention", "tests": ["a", 1]}]}, "markers[0]", "tests"),
    ({"markers": [{"family": "longmemeval", "task": "abstention", "tests": []},
                  {"family": "longmemeval", "task": "abstention", "tests": []}]}, "markers[1]", "task"),
    ({"markers": [{"family": "longmemeval", "task": "abstention", "tests": [], "extra": 1}]}, "markers[0]", "extra"),
    ({"marks": []}, "<file>", "marks"),
])
def test_a_malformed_index_names_file_entry_and_field(tmp_path, doc, record, field):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_markers(path)
    problem = info.value.problem
    assert (problem.file, problem.record, problem.field) == (str(path), record, field)


def test_check_does_not_apply_to_verify(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["inventory", "verify", "--check"]) == 2
    assert "--check" in capsys.readouterr().err
