"""Stage judge with ``executor.shard``: one shard of the questions judged, the manifests written beside the
judged file (its lines and its failures sidecar's), on hypotheses that are unsharded or already that shard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.stages.conftest import check_one_shard, run_stage, sample_ids, set_executor, shard_of, write_suite

RUNS = Path("data") / "runs"


def test_executor_shard_judges_one_shard_of_the_questions_with_its_manifest(stage_workspace: Path):
    ws = stage_workspace
    ids = sample_ids(ws)
    write_suite(ws, ids)
    for stage in ("retrieve", "answer", "judge"):
        done = run_stage(ws, stage, timeout=300)
        assert done.returncode == 0, done.stderr
    judged = ws / RUNS / "hypotheses.jsonl.eval-results-lexical"
    full = judged.read_bytes()
    assert not Path(f"{judged}.shard.json").exists()
    set_executor(ws, shard="2/3")
    done = run_stage(ws, "judge")  # the hypotheses unsharded: executor.shard picks the questions
    assert done.returncode == 0, done.stderr
    got = check_one_shard(judged, "judge", shard_of(ws, "2/3"), ids, full)
    assert json.loads(Path(f"{judged}.shard.json").read_text(encoding="utf-8"))["shard"] == "2/3"
    first = judged.read_bytes()

    done = run_stage(ws, "answer")  # the hypotheses now shard 2/3 too: the same shard judged, the same lines
    assert done.returncode == 0, done.stderr
    assert Path(ws / RUNS / "hypotheses.jsonl.shard.json").exists()
    shutil.move(judged, ws / "first")
    done = run_stage(ws, "judge")
    assert done.returncode == 0, done.stderr
    assert judged.read_bytes() == first
    assert json.loads(Path(f"{judged}.shard.json").read_text(encoding="utf-8"))["lines"]["question_ids"] == got
