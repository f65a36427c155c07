"""A per-field problem in a V1 list file names the record's index and the byte offset of its first byte
(issue 16 item 1), whichever reader read it: ijson's fast path (which has no offsets: found by a second
pass, only when asked) or the strict reader (which has the item in hand). Offsets are bytes, not
characters: the files below hold multi-byte text before the flawed question. Before: file, question id
and field only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mnemetric import jsonstream, jsonstrict
from mnemetric.errors import InputError, ValidationFailed
from mnemetric.longmemeval.adapt import adapt_file
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.instance import iter_instances, scan_file, validate_file
from mnemetric.longmemeval.reference import read_reference

from tests.longmemeval.test_instance import good  # one valid instance, shared


def _questions(n: int = 4) -> list[dict]:
    items = []
    for i in range(n):
        inst = good() | {"question_id": f"q_{i}", "question": f"Wie heißt mein Kätzchen? ✓ {i}"}
        items.append(inst)
    return items


def _write(tmp_path: Path, items: list[dict], *, spoil: str = "") -> tuple[Path, bytes]:
    text = json.dumps(items, indent=1, ensure_ascii=False)
    path = tmp_path / "data.json"
    path.write_bytes(text.encode("utf-8") + spoil.encode())
    return path, path.read_bytes()


def _start(data: bytes, qid: str) -> int:
    """The byte offset of the '{' that opens the question ``qid`` (its id is its first key)."""
    return data.rindex(b"{", 0, data.index(f'"question_id": "{qid}"'.encode()))


def _third_bad(tmp_path: Path) -> tuple[Path, int]:
    items = _questions()
    items[2]["haystack_sessions"][0][1]["role"] = 7  # a wrong type in the 3rd question
    path, data = _write(tmp_path, items)
    at = _start(data, "q_2")
    assert data[:at].decode("utf-8") != data[:at].decode("latin-1")  # multi-byte text before it: bytes != chars
    return path, at


def test_validate_cli_names_index_and_byte_offset_of_the_third_question(tmp_path):
    path, at = _third_bad(tmp_path)
    out = subprocess.run([sys.executable, "-m", "mnemetric.cli", "validate", str(path)], capture_output=True, text=True)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stdout.startswith(f"{path}: question 'q_2' (index 2, byte {at}): field 'haystack_sessions[0][1].role': ")
    (problem,) = validate_file(path)[1]
    assert (problem.record, problem.index, problem.offset) == ("q_2", 2, at)


def test_adapt_cli_names_index_and_byte_offset_and_writes_nothing(tmp_path):
    path, at = _third_bad(tmp_path)
    out_file = tmp_path / "out.jsonl"
    out = subprocess.run([sys.executable, "-m", "mnemetric.cli", "adapt", str(path), "--out", str(out_file)],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and not out_file.exists()
    assert f"error: {path}: question 'q_2' (index 2, byte {at}): field 'haystack_sessions[0][1].role': " in out.stderr


def test_adapt_lists_every_problem_with_its_place(tmp_path):
    items = _questions(6)
    items[1]["answer"] = None
    items[4]["question_type"] = "nope"
    path, data = _write(tmp_path, items)
    with pytest.raises(ValidationFailed) as info:
        adapt_file(SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3"), path, tmp_path / "out.jsonl")
    assert [(p.record, p.index, p.offset) for p in info.value.problems] == [
        ("q_1", 1, _start(data, "q_1")), ("q_4", 4, _start(data, "q_4"))]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_offsets_hold_across_read_boundaries_on_both_readers(tmp_path, monkeypatch, chunk):
    """The second pass of the fast path and the strict reader (a form feed after the list hands the
    whole file to it) give the same exact offsets, however the reads cut the file."""
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    items = _questions(5)
    items[0]["question_date"] = "x"
    items[3]["haystack_sessions"][0][0]["content"] = 5
    real = jsonstream.strict_items
    for spoil, strict in (("", False), ("\f", True)):
        path, data = _write(tmp_path, items, spoil=spoil)
        used = []
        monkeypatch.setattr(jsonstream, "strict_items", lambda p: used.append(p) or real(p))
        got = [(p.index, p.offset) for p in validate_file(path)[1] if p.field != "<json>"]
        assert got == [(0, _start(data, "q_0")), (3, _start(data, "q_3"))]
        assert bool(used) is strict


def test_offset_of_an_earlier_item_is_found_again(tmp_path):
    path, data = _write(tmp_path, _questions(4))
    items = jsonstream.iter_json_items(path)
    list(items)
    assert [items.offset(i) for i in (3, 1, 2)] == [_start(data, f"q_{i}") for i in (3, 1, 2)]


def test_the_one_problem_loader_error_keeps_index_and_offset(tmp_path):
    path, at = _third_bad(tmp_path)
    with pytest.raises(InputError) as err:
        list(iter_instances(path))
    assert (err.value.problem.index, err.value.problem.offset) == (2, at)
    assert f"question 'q_2' (index 2, byte {at})" in str(err.value)


def test_reference_reader_names_index_and_offset(tmp_path):
    items = _questions(4)
    items[2]["answer"] = [1]
    path, data = _write(tmp_path, items)
    with pytest.raises(InputError) as err:
        read_reference(path)
    assert str(err.value).startswith(f"{path}: question 'q_2' (index 2, byte {_start(data, 'q_2')}): field 'answer': ")


# -- warnings (odd but usable data) name their record's index and first byte as problems do


def _warned(tmp_path: Path, *, spoil: str = "") -> tuple[Path, bytes]:
    """Five valid questions; the 4th (index 3) has a question_date before its last session: a warning."""
    items = _questions(5)
    items[3]["question_date"] = "2023/05/20 (Sat) 10:00"
    return _write(tmp_path, items, spoil=spoil)


def test_validate_cli_names_index_and_byte_offset_of_a_warning(tmp_path):
    path, data = _warned(tmp_path)
    at = _start(data, "q_3")
    assert data[:at].decode("utf-8") != data[:at].decode("latin-1")  # bytes != characters before it
    out = subprocess.run([sys.executable, "-m", "mnemetric.cli", "validate", str(path)], capture_output=True, text=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stdout + out.stderr
    (line,) = out.stdout.splitlines()
    assert line.startswith(f"warning: {path}: question 'q_3' (index 3, byte {at}): field 'question_date': "
                           "'2023/05/20 (Sat) 10:00' is earlier than the latest session")
    assert "0 problem(s), 1 warning(s)" in out.stderr


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_warning_offsets_on_both_readers(tmp_path, monkeypatch, chunk):
    """The fast path (offset by the second pass) and the strict reader (a form feed after the list
    hands the file to it) give a warning the same exact offset; a problem and a warning in one file
    each get their own record's offset."""
    monkeypatch.setattr(jsonstrict, "CHUNK", chunk)
    for spoil in ("", "\f"):
        path, data = _warned(tmp_path, spoil=spoil)
        found = []
        scan_file(path, found.append)
        got = [(type(f).__name__, f.record, f.index, f.offset) for f in found if f.field != "<json>"]
        assert got == [("DataWarning", "q_3", 3, _start(data, "q_3"))]
    items = _questions(5)
    items[1]["answer"] = None
    items[3]["question_date"] = "2023/05/20 (Sat) 10:00"
    path, data = _write(tmp_path, items)
    found = []
    scan_file(path, found.append)
    assert [(type(f).__name__, f.index, f.offset) for f in found] == [
        ("Problem", 1, _start(data, "q_1")), ("DataWarning", 3, _start(data, "q_3"))]


def test_a_clean_file_and_the_loader_never_ask_for_a_warning_offset(tmp_path, monkeypatch):
    """No finding, no second pass; validate_file (problems only) and the loader (adapt counts warnings)
    do not locate warnings either."""
    asked = []
    real = jsonstream._item_starts
    monkeypatch.setattr(jsonstream, "_item_starts", lambda p: asked.append(p) or real(p))
    path, _ = _write(tmp_path, _questions(4))
    scan_file(path, lambda f: None)
    assert asked == []
    path, _ = _warned(tmp_path)
    seen = []
    assert validate_file(path) == (5, [])
    assert len(list(iter_instances(path, seen.append))) == 5
    assert asked == [] and [(w.index, w.offset) for w in seen] == [(3, None)]
    scan_file(path, lambda f: None)
    assert asked == [path]  # validate's scan does locate it
