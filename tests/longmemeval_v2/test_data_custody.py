"""V2 custody through custody: a run checks every data file against the root's custody record before use
(real files; a copy of the bundled sample)."""

from __future__ import annotations

import json
import shutil

import pytest

from mnemetric.errors import ConfigError, InputError, IntegrityError
from mnemetric.longmemeval_v2.data_custody import V2Custody, find_custody, read_custody, verify_root
from mnemetric.longmemeval_v2.obtain import prepare
from tests.conftest import ROOT


@pytest.fixture()
def recorded(tmp_path):
    root = tmp_path / "sample"
    shutil.copytree(ROOT / "data" / "sample-v2", root)
    custody = tmp_path / "custody" / "v2-sample.json"
    custody.parent.mkdir()
    prepare({"name": "sample", "source": "bundled", "data_root": str(root)}, custody)
    return root, custody


def test_an_untouched_root_passes_and_is_never_official(recorded):
    root, custody = recorded
    check = verify_root(custody, root)
    assert check.files_checked == len([p for p in root.rglob("*") if p.is_file()])
    assert (check.sha256_verified, check.unverified, check.reasons) == (False, (), ())
    assert check.custody_file == custody.as_posix()


def test_an_edited_gold_answer_stops_the_run_with_the_file_named(recorded):
    root, custody = recorded
    lines = (root / "questions.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["answer"] = "something else"
    (root / "questions.jsonl").write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    with pytest.raises(IntegrityError) as err:
        verify_root(custody, root)
    text = str(err.value)
    assert f"{root / 'questions.jsonl'}: changed since its custody record {custody} was written" in text
    assert "recorded sha256" in text and "dvc repro v2_prepare" in text
    with pytest.raises(IntegrityError, match="questions.jsonl"):
        verify_root(custody, root, only=("questions.jsonl",))  # the later steps check the file they read
    verify_root(custody, root, only=("trajectories.jsonl",))  # an untouched file still passes


def test_a_missing_or_an_added_file_stops_the_run(recorded):
    root, custody = recorded
    (root / "extra.txt").write_text("x")
    with pytest.raises(IntegrityError, match="extra.txt: not in the custody record"):
        verify_root(custody, root)
    (root / "extra.txt").unlink()
    (root / "trajectories.jsonl").unlink()
    with pytest.raises(IntegrityError, match="trajectories.jsonl: listed in the custody record .* but missing"):
        verify_root(custody, root)


def test_records_are_keyed_by_data_root(recorded, tmp_path):
    root, custody = recorded
    with pytest.raises(ConfigError, match="is the custody record of .*, not of"):
        verify_root(custody, tmp_path / "elsewhere")
    assert find_custody(custody.parent, root) == custody and find_custody(custody.parent, tmp_path) is None


def test_the_record_reads_back_to_the_same_bytes_and_old_records_are_refused(recorded, tmp_path):
    _, custody = recorded
    record, data = read_custody(custody)
    assert (json.dumps(record.to_record(), indent=2, ensure_ascii=False) + "\n").encode() == data
    raw = json.loads(data)
    raw.pop("data_root")
    with pytest.raises(InputError, match="field 'data_root': missing"):
        V2Custody.from_record(raw, file="old.json")
    with pytest.raises(ConfigError, match="does not exist"):
        read_custody(tmp_path / "none.json")
