"""Stage judge_audit on the reproduced sample run: offline (the lexical judge), the committed file byte for byte,
and the report page's "Judge validity" section built from it; a judge name no conf folder holds is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from mnemetric.longmemeval.judge_audit.files import read_judge_audit

ROOT = Path(__file__).resolve().parents[3]
RUN_FILES = ("data/suites/sample-full.questions.jsonl", "data/runs/hypotheses.jsonl.eval-results-lexical")


def _workspace(tmp_path: Path, outputs: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(ROOT / "params.yaml", ws / "params.yaml")
    for rel in RUN_FILES:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(outputs / rel, ws / rel)
    return ws


def _stage(ws: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "mnemetric.stages.judge_audit"], cwd=ws, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_stage_writes_the_committed_audit_offline(sample_run_outputs, tmp_path):
    ws = _workspace(tmp_path, sample_run_outputs)
    proc = _stage(ws, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = ws / "metrics/detail/judge_audit.json"
    assert out.read_bytes() == (ROOT / "metrics/detail/judge_audit.json").read_bytes()
    audit = read_judge_audit(out)
    (lexical,) = audit.judges
    assert lexical.name == "lexical"
    assert not (tmp_path / "cache" / "judge-audit").exists()  # no repeats asked: no separate cache opened
    page = (ROOT / "reports/index.html").read_text(encoding="utf-8")
    assert "<h2>Judge validity</h2>" in page


def test_an_unknown_judge_option_is_refused_by_name(sample_run_outputs, tmp_path):
    ws = _workspace(tmp_path, sample_run_outputs)
    params = yaml.safe_load((ws / "params.yaml").read_text())
    params["judge_audit"]["judges"] = ["lexical", "no-such-judge"]
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = _stage(ws, tmp_path)
    assert proc.returncode != 0
    assert "judge=no-such-judge" in proc.stderr and "lexical" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (ws / "metrics/detail/judge_audit.json").exists()
