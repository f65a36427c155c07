"""mnemetric.io: atomic writes reach the disk (folder fsync) and missing inputs are InputErrors."""

from __future__ import annotations

import os
import stat

import pytest

from mnemetric import io
from mnemetric.errors import InputError


def _record_fsyncs(monkeypatch) -> list[str]:
    """Patch os.fsync (as io sees it) to note whether each fd is a folder or a file."""
    kinds: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        kinds.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(io.os, "fsync", fsync)
    return kinds


def test_atomic_open_fsyncs_the_file_then_its_folder(tmp_path, monkeypatch):
    kinds = _record_fsyncs(monkeypatch)
    io.write_json_atomic(tmp_path / "sub" / "out.json", {"a": 1})
    assert kinds == ["file", "dir"]
    assert (tmp_path / "sub" / "out.json").read_text() == '{\n  "a": 1\n}\n'


def test_atomic_open_does_not_fsync_the_folder_when_the_write_fails(tmp_path, monkeypatch):
    kinds = _record_fsyncs(monkeypatch)
    with pytest.raises(RuntimeError), io.atomic_open(tmp_path / "out.txt") as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert kinds == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("refuse", ["open", "fsync"])
def test_atomic_open_tolerates_platforms_that_refuse_a_folder_fsync(tmp_path, monkeypatch, refuse):
    real_open, real_fsync = os.open, os.fsync

    def fake_open(path, flags, *args, **kw):
        if refuse == "open" and os.path.isdir(path):
            raise PermissionError("no folders here")
        return real_open(path, flags, *args, **kw)

    def fake_fsync(fd: int) -> None:
        if refuse == "fsync" and stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(io.os, "open", fake_open)
    monkeypatch.setattr(io.os, "fsync", fake_fsync)
    io.write_jsonl_atomic(tmp_path / "out.jsonl", [{"x": 1}])
    assert (tmp_path / "out.jsonl").read_text() == '{"x": 1}\n'


def test_read_jsonl_missing_file_is_an_input_error(tmp_path):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as info:
        list(io.read_jsonl(path))
    assert (info.value.problem.file, info.value.problem.record, info.value.problem.field) == (
        str(path), "<file>", "<file>")
    assert info.value.problem.message == "does not exist"


def test_require_file(tmp_path):
    path = tmp_path / "x.txt"
    with pytest.raises(InputError, match="does not exist") as info:
        io.require_file(path, fix="run stage prepare first")
    assert info.value.fix == "run stage prepare first" and "fix: run stage prepare first" in str(info.value)
    with pytest.raises(InputError, match="folder"):
        io.require_file(tmp_path)
    path.write_text("hi")
    assert io.require_file(str(path)) == path


def test_read_jsonl_bad_line_names_the_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n')
    with pytest.raises(InputError) as info:
        list(io.read_jsonl(path))
    assert info.value.problem.record == "line 3" and info.value.problem.field == "<json>"


def test_read_jsonl_keeps_finite_numbers_and_names_the_first_that_is_not(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1.5e308, "b": -0.0, "c": 12345678901234567890, "d": 5e-324}\n{"x": [1, 1e309]}\n')
    rows = io.read_jsonl(path)
    assert next(rows) == (1, {"a": 1.5e308, "b": -0.0, "c": 12345678901234567890, "d": 5e-324})
    with pytest.raises(InputError) as info:
        next(rows)
    assert info.value.problem.record == "line 2" and info.value.problem.message.startswith("1e309 is not valid JSON")


# ---------------------------------------------------------------- the one canonical JSON


def test_canonical_json_worked_examples():
    """Hand-written expected text: sorted keys at every depth, no spaces, UTF-8 kept unless ascii."""
    obj = {"b": [1, {"z": 0, "y": "é"}], "a": "x"}
    assert io.dumps_canonical(obj) == '{"a":"x","b":[1,{"y":"é","z":0}]}'
    assert io.dumps_canonical(obj, ascii=True) == '{"a":"x","b":[1,{"y":"\\u00e9","z":0}]}'


def test_canonical_json_finite_refuses_nan_and_infinity():
    assert io.dumps_canonical({"x": float("nan")}) == '{"x":NaN}'  # the default keeps json's old behaviour
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError):
            io.dumps_canonical({"x": [bad]}, finite=True)


def test_every_canonical_spelling_is_the_io_one():
    """The LLM cache key text and the custody config hash are io.dumps_canonical with their flag."""
    import hashlib

    from mnemetric.custody.manifest import config_sha256
    from mnemetric.llm.cache import canonical_json

    section = {"reader": {"name": "café"}, "k": 2}
    assert config_sha256(section) == hashlib.sha256(b'{"k":2,"reader":{"name":"caf\\u00e9"}}').hexdigest()
    assert canonical_json(section) == '{"k":2,"reader":{"name":"café"}}'
    with pytest.raises(ValueError):
        canonical_json({"t": float("inf")})


def test_no_inline_canonical_json_left_in_src():
    """No module spells json.dumps(..., sort_keys=True, separators=(",", ":")) itself but io.py."""
    from pathlib import Path

    src = Path(io.__file__).resolve().parent
    hits = [str(p.relative_to(src)) for p in src.rglob("*.py")
            if p.name != "io.py" and 'separators=(",", ":")' in p.read_text(encoding="utf-8")]
    assert hits == []
