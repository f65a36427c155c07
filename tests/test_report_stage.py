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
from tests.longmemeval.test_report import DATA_RECORD, QA_RECORD, RETRIEVAL

URL = re.compile(r"https?://")


def setup(tmp: Path, run: dict | None) -> None:
    shutil.copy2(ROOT / "params.yaml", tmp / "params.yaml")
    files = {"metrics/detail/qa.json": QA_RECORD, "metrics/detail/retrieval.json": RETRIEVAL,
             "metrics/data.json": DATA_RECORD}
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
    return subprocess.run([sys.executable, "-m", "mnemetric.stages.report", "longmemeval", "longmemeval-v2"], cwd=tmp, env=env,
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


def test_the_page_is_the_headline_family_s_named_by_params_benchmark(tmp_path):
    """With benchmark longmemeval-v2 the page shows V2's own numbers and provenance, not V1's."""
    import yaml

    setup(tmp_path, {"official_equivalence": {"value": False, "reasons": ["v1 reason"]}, "memory": {"name": "bm25"},
                     "variant": {"name": "sample"}, "suite": {"name": "full"}})
    params = yaml.safe_load((tmp_path / "params.yaml").read_text(encoding="utf-8"))
    params["benchmark"] = {"_target_": "mnemetric.longmemeval_v2.family.LongMemEvalV2Family",
                           "name": "longmemeval-v2", "metrics": "metrics/v2.json"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    proc = stage(tmp_path)  # V2's files are absent: a message naming them, no page
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "metrics/v2.json" in proc.stderr
    assert not (tmp_path / "reports/index.html").exists()
    (tmp_path / "metrics/run-v2.json").write_text(json.dumps({
        "benchmark": "LongMemEval-V2", "memory": {"name": "full-context", "fingerprint_sha256": "f" * 64},
        "variant": {"name": "sample", "data_root": "data/sample-v2", "haystack": "small", "source": "bundled",
                    "sha256_verified": False, "custody": {"file": "data/custody/v2-sample.json", "sha256": "c" * 64}},
        "suite": {"name": "full"}, "reader": {"name": "offline", "model": None, "official": False},
        "judge": {"name": "offline", "model": None, "prompt_set_sha256": None, "official": False},
        "token_counter": {"name": "o200k-standin", "official": False},
        "counts": {"questions": 8, "judged": 8, "failed": 0},
        "official_equivalence": {"value": False, "reasons": ["offline checker"]}}))
    block = {"value": 0.375, "correct": 3, "n": 8, "ci95_low": 0.125, "ci95_high": 0.75, "method": "clopper-pearson"}
    (tmp_path / "metrics/v2.json").write_text(json.dumps({
        "v2": "sample", "settings": {"memory": "full-context", "tier": "small"},
        "combined": {"accuracy": {"overall_full_set": block}},
        "domains": {"web": {"accuracy": {"overall_full_set": {**block, "value": 0.5, "n": 4}}}},
        "by_category": {"non_abstention_by_category": {"static": {"count": 3, "pct_correct": 2 / 3}},
                        "abstention_overall": {"count": 2, "pct_correct": 0.0}}}))
    proc = stage(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    assert "LongMemEval-V2, memory full-context on sample (small)" in page and offline(page)
    assert "offline checker" in page and "v1 reason" not in page and "judge model differs" not in page
    assert "accuracy (full set) (combined)" in page and "accuracy (full set) (web)" in page  # by domain
    assert "Accuracy per category" in page and "static" in page and "abstention (all)" in page  # by category
    assert "data/custody/v2-sample.json" in page and "o200k-standin" in page  # V2's data custody, token counter
    assert "0.210" not in page  # V1's overall interval (metrics/detail/qa.json) is not V2's page
    assert "LongMemEval-V2 result: memory `full-context` on `sample` (suite `full`)" in page  # V2's card
    # with the committed V2 measurements beside them: latency, LAFS, the memory's build and calls, failure
    # attribution and tokens by item type join the page (issue 17 items 4 and 6), as the files say
    for rel in ("metrics/v2-latency.json", "metrics/detail/v2.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tmp_path / rel)
    assert "memory query latency" not in page and "Failure attribution" not in page
    proc = stage(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "reports/index.html").read_text(encoding="utf-8")
    for shown in ("memory query latency", "No LAFS: the data is not the verified official tier", "build time",
                  "Failure attribution", "memory returned nothing relevant", "checker disputed",
                  "kept context by item type"):
        assert shown in page, shown
    assert offline(page)
