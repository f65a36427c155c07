"""Stage data_metrics reads the suite file typed (longmemeval.suite.read_suite): its block in
metrics/data.json comes from a valid suite, and a suite whose fields disagree is one message naming
file and field (no traceback), with nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.stages.conftest import run_stage, sample_ids, write_suite



@pytest.fixture()
def workspace(stage_workspace: Path) -> Path:
    (stage_workspace / "data" / "custody").mkdir()
    shutil.copy(ROOT / "data" / "custody" / "sample.json", stage_workspace / "data" / "custody" / "sample.json")
    return stage_workspace


def _suite(ws: Path, ids: list[str], **changes) -> Path:
    return write_suite(ws, ids, **({"suite": "two", "kind": "stratified", "seed": 3} | changes))


def _run(ws: Path) -> subprocess.CompletedProcess:
    return run_stage(ws, "data_metrics")


def test_the_suite_block_comes_from_the_suite_file(workspace: Path):
    ids = sample_ids(2)
    _suite(workspace, ids)
    done = _run(workspace)
    assert done.returncode == 0, done.stderr
    suite = json.loads((workspace / "metrics" / "data.json").read_text())["suite"]
    assert (suite["name"], suite["size"]) == ("two", 2)
    assert suite["ids_sha256"] == hashlib.sha256(f"{ids[0]}\n{ids[1]}".encode()).hexdigest()
    assert suite["questions"]["total"] == 2


@pytest.mark.parametrize("changes, field", [
    ({"size": 3}, "'size'"),
    ({"ids_sha256": "0" * 64}, "'ids_sha256'"),
    ({"question_ids": "q1"}, "'question_ids'"),
])
def test_a_suite_that_disagrees_with_itself_is_one_message(workspace: Path, changes: dict, field: str):
    path = _suite(workspace, sample_ids(2), **changes)
    done = _run(workspace)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(Path("data/suites/sample-full.json")) in done.stderr and field in done.stderr, done.stderr
    assert path.exists() and not (workspace / "metrics" / "data.json").exists()


def test_a_bad_custody_record_is_one_message(workspace: Path):
    _suite(workspace, sample_ids(2))
    custody = workspace / "data" / "custody" / "sample.json"
    custody.write_text('{"verified": true}', encoding="utf-8")
    done = _run(workspace)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "data/custody/sample.json: <file>: field 'source': missing" in done.stderr, done.stderr
