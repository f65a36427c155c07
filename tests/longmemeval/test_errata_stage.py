"""Stage qa_metrics with the errata overlay on: metrics/detail/qa.json gains errata_sensitivity, the
official numbers unchanged (issue "Custody and publishability", item 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from mnemetric.config import compose_to

from tests.conftest import ROOT


def stage(ws, name):
    proc = subprocess.run([sys.executable, "-m", f"mnemetric.stages.{name}"], cwd=ws, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=300)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"


@pytest.mark.task("longmemeval", "abstention")
def test_qa_metrics_with_errata_adds_a_sensitivity_block_and_keeps_the_official_numbers(tmp_path):
    ws = tmp_path
    shutil.copytree(ROOT / "data" / "sample", ws / "data" / "sample")
    compose_to(ws / "params.yaml", ROOT / "conf")
    for name in ("prepare", "adapt", "suite", "retrieve", "answer", "judge", "qa_metrics"):
        stage(ws, name)
    official = json.loads((ws / "metrics/detail/qa.json").read_text())
    assert "errata_sensitivity" not in official  # opt-in
    judged = [json.loads(x) for x in (ws / "data/runs/hypotheses.jsonl.eval-results-lexical").read_text().splitlines()]
    disputed = [judged[0]["question_id"], judged[1]["question_id"]]
    (ws / "errata.yaml").write_text(yaml.safe_dump({
        "schema": "mnemetric.longmemeval-errata/v1", "source": "a test",
        "entries": [{"question_id": q, "variants": ["s"], "variants_basis": "stated", "issues": [1],
                     "description": "disputed in this test"} for q in disputed] + [
                    {"question_id": "not-in-the-sample", "variants": ["s"], "variants_basis": "stated", "issues": [2],
                     "description": "absent"}]}))
    params = yaml.safe_load((ws / "params.yaml").read_text())
    params["errata"] = {"enabled": True, "file": "errata.yaml"}
    (ws / "params.yaml").write_text(yaml.safe_dump(params))
    stage(ws, "qa_metrics")
    detail = json.loads((ws / "metrics/detail/qa.json").read_text())
    block = detail["errata_sensitivity"]
    assert detail["overall"] == official["overall"] and detail["per_type"] == official["per_type"]
    assert block["official"]["overall"] == official["overall"]
    assert block["excluded"] == sorted(disputed) and block["absent"] == ["not-in-the-sample"]
    rest = [j["autoeval_label"]["label"] for j in judged if j["question_id"] not in disputed]
    assert block["excluding_errata"]["overall"] == sum(rest) / len(rest)
    assert block["excluding_errata"]["n"] == len(judged) - 2
