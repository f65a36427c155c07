"""Stage data_metrics reads the suite file typed (longmemeval.suite.read_suite): its block in
metrics/data.json comes from a valid suite, and a suite whose fields disagree is one message naming
file and field (no traceback), with nothing written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

ADAPTED = ROOT / "data" / "adapted" / "sample.jsonl"


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    if not ADAPTED.exists():
        pytest.skip(f"{ADAPTED} is absent (run `dvc repro adapt` in the project first)")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "data" / "adapted").mkdir(parents=True)
    shutil.copy(ADAPTED, tmp_path / "data" / "adapted" / "sample.jsonl")
    (tmp_path / "data" / "custody").mkdir()
    (tmp_path / "data" / "custody" / "sample.json").write_text('{"verified": true}', encoding="utf-8")
    (tmp_path / "data" / "suites").mkdir()
    return tmp_path


def _ids(n: int) -> list[str]:
    with open(ADAPTED, encoding="utf-8") as fh:
        return [json.loads(line)["eval"]["question_id"] for line, _ in zip(fh, range(n))]


def _suite(ws: Path, ids: list[str], **changes) -> Path:
    sha = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()  # the rule, by hand: ids joined by newlines
    raw = {"suite": "two", "variant": "sample", "kind": "stratified", "seed": 3, "size": len(ids), "ids_sha256": sha,
           "question_ids": ids} | changes
    path = ws / "data" / "suites" / "sample-full.json"
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return path


def _run(ws: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemetric.stages.data_metrics"], cwd=ws, capture_output=True,
                          text=True, env=os.environ.copy(), timeout=120)


def test_the_suite_block_comes_from_the_suite_file(workspace: Path):
    ids = _ids(2)
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
    path = _suite(workspace, _ids(2), **changes)
    done = _run(workspace)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert str(Path("data/suites/sample-full.json")) in done.stderr and field in done.stderr, done.stderr
    assert path.exists() and not (workspace / "metrics" / "data.json").exists()
