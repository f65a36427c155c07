"""LongMemEval-V2 in the same pipeline: `dvc exp run -S benchmark=longmemeval-v2` runs the bundled V2
sample end to end offline (no API key) and writes metrics/v2.json; a rerun writes the same bytes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


@pytest.mark.task("longmemeval-v2", "Static state recall")
@pytest.mark.task("longmemeval-v2", "Dynamic state tracking")
@pytest.mark.task("longmemeval-v2", "Workflow knowledge")
@pytest.mark.task("longmemeval-v2", "Environment gotchas")
@pytest.mark.task("longmemeval-v2", "Premise awareness")
def test_exp_run_benchmark_v2_runs_the_bundled_v2_sample_offline(dvc_repo):
    dvc_repo.dvc("exp", "run", "-S", "benchmark=longmemeval-v2", env={"OPENAI_API_KEY": ""})
    m = dvc_repo.json("metrics/v2.json")
    assert m["benchmark"] == "longmemeval-v2" and m["v2"] == "sample"
    assert m["schema"] == "mnemetric.longmemeval-v2.metrics/1"
    assert set(m["domains"]) == {"web", "enterprise"} and m["combined"]["questions"] == 14
    assert m["official_equivalence"]["official"] is False and m["official_equivalence"]["reasons"]
    overall = m["combined"]["accuracy"]["overall_full_set"]
    assert 0 <= overall["value"] <= 1 and overall["n"] == 14
    assert "memory_query_avg_seconds" not in m["combined"]  # measured, so untracked
    run_dir = dvc_repo.path / ".mnemetric" / "v2-run"
    assert (run_dir / "web" / "per_question.jsonl").exists() and (run_dir / "combined_aggregated_metrics.json").exists()
    first = (dvc_repo.path / "metrics/v2.json").read_bytes()
    dvc_repo.dvc("repro", "--force", "--single-item", "v2")
    assert (dvc_repo.path / "metrics/v2.json").read_bytes() == first
