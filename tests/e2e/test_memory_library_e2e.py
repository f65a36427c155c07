"""A memory library as a conf option, end to end with the real dvc CLI: `dvc exp run -S memory=mem0` against
the loopback OpenAI server (replies shaped as mem0 expects), through the harness's model proxy."""

from __future__ import annotations

import importlib.util

import pytest

from tests.support.memory_library_replies import LibraryServer

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(importlib.util.find_spec("mem0") is None,
                                 reason='mem0ai is not installed: pip install -e ".[mem0]" (about 15 s)')]


def test_exp_run_memory_mem0_scores_retrieval_and_a_forced_rerun_sends_0_requests(committed_repro, tmp_path):
    env = {"OPENAI_API_KEY": "sk-test", "MNEMETRIC_CACHE_DIR": str(tmp_path / "cache"),
           "MEM0_DIR": str(tmp_path / "mem0")}
    with LibraryServer(embedding_dim=8) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        committed_repro.dvc("exp", "run", "-S", "memory=mem0", "-S", "memory.embedding_dims=8",
                            "-S", "suite=development", env=env)
        sent = server.count
        m = committed_repro.json("metrics/detail/retrieval.json")
        assert m["memory"] == "mem0" and "recall_any@10" in m["exclude_abs"]["session"]
        cost = committed_repro.json("metrics/detail/memory_cost.json")
        assert cost["uses_model_proxy"] is True and cost["replayable"] is True and cost["requests"]["chat"] > 0
        assert cost["requests"]["chat"] + cost["requests"]["embeddings"] == sent
        run = committed_repro.json("metrics/run.json")
        assert "mem0ai" in run["memory"]["libraries"]
        committed_repro.dvc("repro", "-f", "-s", "retrieve", env=env)  # every request answered by the cache
        assert server.count == sent
