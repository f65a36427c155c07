"""The report stage (python -m mnemetric.stages.report) on real files in a temporary folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.longmemeval.test_report import DATA, QA, RETRIEVAL

URL = re.compile(r"https?://")


def setup(tmp: Path, run: dict | None) -> None:
    shutil.copy2(ROOT / "params.yaml", tmp / "params.yaml")
    files = {"metrics/detail/qa.json": QA, "metrics/detail/retrieval.json": RETRIEVAL, "metrics/data.json": DATA}
    if run is not None:
        files["metrics/run.json"] = run
    for rel, body in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(json.dumps(body), encoding="utf-8")
    judged = tmp / "data/runs/hypotheses.jsonl.eval-results-lexical"
    judged.parent.mkdir(parents=True)
    judged.write_text("")


def stage(tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "mnemetric.stages.report"], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)


def offline(page: str) -> bool:
    return not URL.search(page.replace('xmlns="http://www.w3.org/2000/svg"', ""))


def test_stage_writes_an_offline_page_with_the_manifest_verdict_and_card(tmp_path):
    setup(tmp_path, {"official_equivalence": {"value": False, "reasons": ["the sample is not a pinned file"]},
                     "memory": {"name": "bm25"}, "variant": {"name": "sample"}, "suite": {"name": "full"}})
    proc = stage(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    assert offline(page) and "<script" not in page
    assert "the sample is not a pinned file" in page and "judge model differs" not in page
    assert 'id="result-card"' in page and "result: memory" in page
    assert "0.210" in page and "0.790" in page  # the overall interval of the QA detail


def test_without_a_manifest_the_qa_flag_decides_and_no_card(tmp_path):
    setup(tmp_path, None)
    proc = stage(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    assert "judge model differs" in page and 'id="result-card"' not in page and offline(page)


def test_a_missing_detail_file_is_a_message_and_no_page(tmp_path):
    setup(tmp_path, None)
    (tmp_path / "metrics/detail/qa.json").unlink()
    proc = stage(tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "metrics/detail/qa.json" in proc.stderr and "dvc repro" in proc.stderr
    assert not (tmp_path / "reports/index.html").exists()


def test_an_older_layout_is_named(tmp_path):
    setup(tmp_path, None)
    (tmp_path / "metrics/detail/qa.json").write_text(json.dumps({"per_type": {"multi-session": 0.5}}))
    proc = stage(tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "per_type" in proc.stderr


def test_the_card_is_the_headline_family_s_named_by_params_benchmark(tmp_path):
    import yaml

    setup(tmp_path, {"official_equivalence": {"value": False, "reasons": ["v1 reason"]}, "memory": {"name": "bm25"},
                     "variant": {"name": "sample"}, "suite": {"name": "full"}})
    params = yaml.safe_load((tmp_path / "params.yaml").read_text(encoding="utf-8"))
    params["benchmark"] = {"_target_": "mnemetric.longmemeval_v2.family.LongMemEvalV2Family",
                           "name": "longmemeval-v2", "metrics": "metrics/v2.json"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    assert stage(tmp_path).returncode == 0
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    assert 'id="result-card"' not in page  # the headline family's manifest, metrics/run-v2.json, is absent
    (tmp_path / "metrics/run-v2.json").write_text(json.dumps({
        "benchmark": "LongMemEval-V2", "memory": {"name": "full-context"}, "variant": {"name": "sample"},
        "suite": {"name": "full"}, "official_equivalence": {"value": False, "reasons": ["offline checker"]}}))
    (tmp_path / "metrics/v2.json").write_text(json.dumps({"combined": {"accuracy": {
        "overall_full_set": {"value": 0.375, "ci95_low": 0.125, "ci95_high": 0.75, "n": 8}}}}))
    proc = stage(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    assert "LongMemEval-V2 result: memory `full-context` on `sample` (suite `full`)" in page
    assert "0.3750" in page and "offline checker" in page
