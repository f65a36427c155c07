"""Issue 19, item 7: the V1 input gaps still open after issue 7 — each bad input through the real CLI.

Before the fix: a repeated key kept its last value silently (the gold answer changed), an empty
question / haystack / session validated clean, a FIFO blocked the reader forever, a gzip file was
reported as "UTF-16", and bad numeric options raised a traceback. Each test asserts a non-zero exit,
the message naming file, record and field, and no traceback.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mnemetric.cli import main
from tests.longmemeval.test_instance import good


def write(tmp_path: Path, instances, name: str = "data.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(instances, indent=1), encoding="utf-8")
    return path


def run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return code, text


# ------------------------------------------------------------------ duplicate keys


def test_duplicate_answer_key_is_refused_by_validate(tmp_path, capsys):
    path = tmp_path / "dup.json"
    text = json.dumps([good()], indent=1).replace('"answer": "Miso"', '"answer": "Miso", "answer": "Rex"')
    path.write_text(text, encoding="utf-8")
    code, out = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}: question 'abcd1234' (index 0, byte 3): field 'answer': duplicate key: 'answer' appears twice" in out


def test_duplicate_key_inside_a_turn_is_named_by_its_path(tmp_path, capsys):
    path = tmp_path / "dup.json"
    text = json.dumps([good()], indent=1).replace('"content": "hi"', '"content": "hi", "content": "bye"')
    path.write_text(text, encoding="utf-8")
    code, out = run(capsys, "validate", path)
    assert code == 1
    assert "question 'abcd1234' (index 0, byte 3): field 'haystack_sessions[0][0].content': duplicate key: 'content'" in out


def test_duplicate_key_is_refused_by_adapt(tmp_path, capsys):
    path = tmp_path / "dup.json"
    text = json.dumps([good()], indent=1).replace('"question_type"', '"question": "x", "question_type"', 1)
    path.write_text(text, encoding="utf-8")
    out_file = tmp_path / "out.jsonl"
    code, out = run(capsys, "adapt", path, "--out", out_file)
    assert code != 0 and not out_file.exists()
    assert "abcd1234" in out and "field 'question': duplicate key" in out


def test_duplicate_key_in_a_jsonl_line_names_line_question_and_key(tmp_path):
    from mnemetric.errors import InputError
    from mnemetric.io import read_jsonl
    path = tmp_path / "log.jsonl"
    path.write_text('{"question_id": "q1"}\n{"question_id": "q2", "hypothesis": "a", "hypothesis": "b"}\n')
    with pytest.raises(InputError) as info:
        list(read_jsonl(path))
    assert (info.value.problem.file, info.value.problem.record, info.value.problem.field) == \
        (str(path), "line 2 (q2)", "hypothesis")


def test_duplicate_key_in_hypotheses_is_refused_by_judge(tmp_path, capsys):
    ref = write(tmp_path, [good()], "ref.json")
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"question_id": "abcd1234", "hypothesis": "Miso", "hypothesis": "Rex"}\n')
    code, out = run(capsys, "judge", hyp, ref, "--judge", "lexical", "--out", tmp_path / "judged.jsonl")
    assert code != 0
    assert f"{hyp}: line 1 (abcd1234): field 'hypothesis': duplicate key" in out


# ------------------------------------------------------------------ empty question / haystack / session


def test_empty_question_is_refused(tmp_path, capsys):
    inst = good() | {"question": "   "}
    path = write(tmp_path, [inst])
    code, out = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}: question 'abcd1234' (index 0, byte 3): field 'question': is empty" in out


def test_empty_haystack_is_refused(tmp_path, capsys):
    inst = good() | {"haystack_session_ids": [], "haystack_dates": [], "haystack_sessions": [],
                     "answer_session_ids": []}
    path = write(tmp_path, [inst])
    code, out = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}: question 'abcd1234' (index 0, byte 3): field 'haystack_sessions': is empty: no sessions" in out


def test_empty_session_is_refused(tmp_path, capsys):
    inst = good()
    inst["haystack_sessions"][0] = []
    path = write(tmp_path, [inst])
    code, out = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}: question 'abcd1234' (index 0, byte 3): field 'haystack_sessions[0]': is empty: a session needs " \
           "at least one turn" in out


# ------------------------------------------------------------------ special and compressed files


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "data.json"
    os.mkfifo(fifo)
    for args in (["validate", fifo], ["adapt", fifo, "--out", tmp_path / "o.jsonl"]):
        done = subprocess.run([sys.executable, "-m", "mnemetric.cli", *map(str, args)], capture_output=True,
                              text=True, timeout=20)
        assert done.returncode != 0
        assert f"{fifo}: <file>: field '<file>': is a FIFO (named pipe), not a regular file" in done.stderr
        assert "Traceback" not in done.stderr


def test_device_is_refused(capsys):
    code, out = run(capsys, "validate", os.devnull)
    assert code != 0
    assert f"{os.devnull}: <file>: field '<file>': is a character device" in out


@pytest.mark.parametrize("name, opener, command", [
    ("data.json.gz", gzip.open, "gunzip"), ("data.json.bz2", bz2.open, "bunzip2"), ("data.json.xz", lzma.open, "unxz"),
])
def test_compressed_file_is_named_as_such(tmp_path, capsys, name, opener, command):
    path = tmp_path / name
    with opener(path, "wb") as fh:
        fh.write(json.dumps([good()]).encode())
    kind = {"gunzip": "gzip", "bunzip2": "bzip2", "unxz": "xz"}[command]
    code, out = run(capsys, "validate", path)
    assert code != 0
    assert f"{path}: <file>: field '<file>': is a {kind} file" in out
    assert f"decompress it first ({command} {path})" in out
    assert "UTF-16" not in out


def test_zip_file_is_named_as_such(tmp_path, capsys):
    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data.json", json.dumps([good()]))
    code, out = run(capsys, "validate", path)
    assert code != 0 and "is a zip file" in out and "unzip" in out


def test_gzip_jsonl_log_is_named_by_score_retrieval(tmp_path, capsys):
    log = tmp_path / "log.jsonl.gz"
    with gzip.open(log, "wt") as fh:
        fh.write('{"question_id": "q1"}\n')
    code, out = run(capsys, "score-retrieval", log, "--granularity", "session", "--profile",
                    "longmemeval-session-upstream-v1", "--out", tmp_path / "m.json")
    assert code != 0
    assert f"{log}: <file>: field '<file>': is a gzip file" in out


def test_duplicate_answer_in_the_reference_is_refused_by_judge(tmp_path, capsys):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps([good()], indent=1).replace('"answer": "Miso"', '"answer": "Miso", "answer": "Rex"'))
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"question_id": "abcd1234", "hypothesis": "Miso"}\n')
    code, out = run(capsys, "judge", hyp, ref, "--judge", "lexical", "--out", tmp_path / "judged.jsonl")
    assert code != 0 and not (tmp_path / "judged.jsonl").exists()
    assert f"{ref}: question 'abcd1234' (index 0, byte 3): field 'answer': duplicate key: 'answer' appears twice" in out
