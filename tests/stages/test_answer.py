"""Stage answer reads the typed contexts file: a bad line or a question the adapted data lacks is one
message naming file, line and field (no traceback), and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.stages.conftest import check_one_shard, run_stage, sample_ids, set_executor, shard_of, write_questions_of, \
    write_suite


@pytest.fixture()
def workspace(tmp_path: Path, adapted_sample: Path) -> Path:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "data" / "adapted").mkdir(parents=True)
    shutil.copy(adapted_sample, tmp_path / "data" / "adapted" / "sample.jsonl")
    (tmp_path / "data" / "runs").mkdir()
    (tmp_path / "data" / "suites").mkdir()
    write_questions_of(tmp_path, sample_ids(tmp_path))
    return tmp_path


def _answer(ws: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mnemetric.stages.answer"], cwd=ws, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=120)


def _first_question(ws: Path) -> str:
    with open(ws / "data" / "adapted" / "sample.jsonl", encoding="utf-8") as fh:
        return json.loads(fh.readline())["eval"]["question_id"]


def _context(qid: str) -> dict:
    return {"question_id": qid, "memory": "bm25", "granularity": "session", "k": 1, "budget_tokens": 10,
            "tokenizer": "wordpunct-v1", "tokens": 2,
            "items": [{"session_id": "s001", "upstream_session_id": "u", "turn_index": None, "date": None,
                       "messages": [{"role": "user", "content": "hello there"}], "truncated": False}]}


def test_a_context_for_an_unknown_question_names_the_line(workspace: Path):
    lines = [_context(_first_question(workspace)), _context("not-a-question")]
    (workspace / "data/runs/contexts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    res = _answer(workspace)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "data/runs/contexts.jsonl: line 2 (not-a-question): field 'question_id'" in res.stderr
    assert not (workspace / "data/runs/hypotheses.jsonl").exists()


def test_a_malformed_context_names_its_field(workspace: Path):
    bad = _context(_first_question(workspace))
    bad["items"][0]["messages"][0].pop("content")
    (workspace / "data/runs/contexts.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    res = _answer(workspace)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "field 'items[0].messages[0].content': missing" in res.stderr
    assert not (workspace / "data/runs/hypotheses.jsonl").exists()


def test_the_extractive_reader_answers_from_the_typed_context(workspace: Path):
    qid = _first_question(workspace)
    (workspace / "data/runs/contexts.jsonl").write_text(json.dumps(_context(qid)) + "\n", encoding="utf-8")
    res = _answer(workspace)
    assert res.returncode == 0, res.stderr
    (line,) = (workspace / "data/runs/hypotheses.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["question_id"] == qid
    usage = (workspace / "data/runs/answer-usage.json").read_text(encoding="utf-8")
    assert usage == ('{\n  "responses": 0,\n  "prompt_tokens": 0,\n  "completion_tokens": 0,\n  "usd": 0.0,\n'
                     '  "unpriced_models": [],\n  "per_model": {}\n}\n')


def test_executor_shard_answers_one_shard_of_the_questions_with_its_manifest(stage_workspace: Path):
    """executor.shard on stage answer, the contexts unsharded: the shard's questions only (the unsharded run's
    hypotheses of them, byte for byte), and the manifests of the hypotheses and of their failures sidecar."""
    ws = stage_workspace
    ids = sample_ids(ws)
    write_suite(ws, ids)
    for stage in ("retrieve", "answer"):
        done = run_stage(ws, stage, timeout=300)
        assert done.returncode == 0, done.stderr
    hyps = ws / "data/runs/hypotheses.jsonl"
    full = hyps.read_bytes()
    assert not Path(f"{hyps}.shard.json").exists()
    set_executor(ws, shard="2/3")
    done = run_stage(ws, "answer")
    assert done.returncode == 0, done.stderr
    got = check_one_shard(hyps, "answer", shard_of(ws, "2/3"), ids, full)
    assert json.loads(Path(f"{hyps}.shard.json").read_text(encoding="utf-8"))["shard"] == "2/3"
