"""A LongMemEval-V2 memory that calls models (the CallsModels capability: ``dense`` with ``backend: openai``) gets the
run's ONE executor: its embedding requests spend under the run's ``llm.budget`` and land in the run's usage ledger
(stage v2_memory's memory-usage.json and run log; `mnemetric v2 run`'s OUT/usage.json), and it is built and queried
in the run's process even when ``executor.workers`` > 1. Real stages over the bundled sample, the real openai SDK
against the loopback server."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from mnemetric.cli import main
from mnemetric.execute import ImmediateExecutor
from mnemetric.llm.budget import BudgetExceeded
from tests.conftest import ROOT
from tests.longmemeval_v2.test_selection import _stage_workspace
from tests.support.openai_server import FakeOpenAIServer

SAMPLE = ROOT / "data" / "sample-v2"
PRICED = "gpt-4o-mini-2024-07-18"
"""A model the conf's price table knows (the default budget's max_usd needs a price)."""


def _dense(server: FakeOpenAIServer) -> list[str]:
    return ["v2/memory=dense", "v2.memory.backend=openai", f"v2.memory.model={PRICED}",
            f"v2.memory.base_url={server.base_url}"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MNEMETRIC_RUN_LOG", str(tmp_path / "run-log.jsonl"))


def _memory_stage(ws: Path) -> None:
    from mnemetric.stages import v2_memory, v2_prepare

    v2_prepare.main()
    v2_memory.main()


def test_the_run_s_budget_stops_a_memory_s_embedding_calls(tmp_path, monkeypatch, env):
    """One request allowed: the second embedding request of the memory is refused by the run's budget."""
    with FakeOpenAIServer() as server:
        ws, params = _stage_workspace(tmp_path, monkeypatch, *_dense(server), "llm.budget.max_requests=1")
        assert params["v2"]["haystack"] == "small"
        with pytest.raises(BudgetExceeded, match="max_requests"):
            _memory_stage(ws)
        assert server.count == 1 and all(r.path.endswith("/embeddings") for r in server.requests)
    assert not (ws / "data" / "v2-runs" / "memory.jsonl").exists()


def test_the_usage_sidecar_and_the_run_log_count_the_memory_s_embedding_requests(tmp_path, monkeypatch, env):
    """The run log counts every request the memory sent; memory-usage.json the work (every text embedded, the
    same cold or warm: a rerun served by the caches sends nothing and writes the same bytes)."""
    from mnemetric.stages import v2_memory

    with FakeOpenAIServer() as server:
        ws, _ = _stage_workspace(tmp_path, monkeypatch, *_dense(server))
        _memory_stage(ws)
        sent, texts = server.count, sum(len(r.body["input"]) for r in server.requests)
        sidecar = ws / "data" / "v2-runs" / "memory-usage.json"
        cold = sidecar.read_bytes()
        v2_memory.main()
        assert server.count == sent
    assert sent > 1 and all(r.path.endswith("/embeddings") for r in server.requests)
    usage = json.loads(cold)
    assert usage["per_model"][PRICED]["responses"] == usage["responses"] >= texts > sent
    assert usage["prompt_tokens"] > 0 and usage["usd"] > 0 and usage["unpriced_models"] == []
    assert sidecar.read_bytes() == cold
    log = [json.loads(line) for line in (tmp_path / "run-log.jsonl").read_text().splitlines()]
    first, again = [e for e in log if e["stage"] == "v2_memory"]
    assert first["sent"] == sent and first["usd_paid"] > 0 and again["sent"] == 0, log


@pytest.mark.parametrize("plain", [False, True], ids=["conf-option", "plain-factory"])
def test_a_memory_that_calls_models_is_built_here_with_workers(tmp_path, monkeypatch, env, plain):
    """workers = 2 over the medium haystack (a memory per question, so otherwise on the pool): the dense memory is
    built and queried in this process, its calls through the run's executor (its ledger counts them). A plain
    factory (no ``calls_models`` of its own) is looked at through one memory it builds."""
    from mnemetric.longmemeval_v2.pipeline import memory_factory, option
    from mnemetric.longmemeval_v2.steps import memory_step
    from mnemetric.longmemeval_v2.tokens import O200kCounter
    from mnemetric.longmemeval_v2.validate import haystack_path

    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))

    class Spy(ImmediateExecutor):
        mapped = 0

        def map(self, task, items, *, desc="questions"):
            Spy.mapped += 1
            return super().map(task, items, desc=desc)

    with FakeOpenAIServer() as server:
        section = option("memory", "dense", SAMPLE, backend="openai", model=PRICED, base_url=server.base_url)
        factory, name = memory_factory({"memory": section})
        if plain:
            factory = functools.partial(factory.__call__)
        with Spy(workers=2, progress=False) as executor:
            rows, _ = memory_step(SAMPLE, haystack_path(SAMPLE, "medium"), ("web",), factory, counter=O200kCounter(),
                                  max_tokens=2000, system=name, mapper=executor)
            assert Spy.mapped == 0 and rows
            assert executor.usage.requests_sent == server.count > 1


def test_v2_run_spends_its_one_budget_on_the_memory_s_calls_and_counts_them_in_usage_json(tmp_path, monkeypatch,
                                                                                          capsys, env):
    """`mnemetric v2 run` with a project's dense option (backend openai): --max-requests 1 stops the run with the
    budget error (no traceback, no output folder); unbounded, OUT/usage.json holds the embedding work."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        (tmp_path / "conf" / "v2" / "memory").mkdir(parents=True)
        (tmp_path / "conf" / "v2" / "memory" / "dense-api.yaml").write_text(
            "_target_: mnemetric.longmemeval_v2.baselines.dense_states\nname: dense-api\ntop_k: 10\nbackend: openai\n"
            f"model: {PRICED}\nbase_url: {server.base_url}\n")
        args = ["v2", "run", str(SAMPLE), "--haystack", "small", "--memory", "dense-api", "--token-counter", "o200k",
                "--conf", str(tmp_path / "conf")]
        assert main([*args, "--out", str(tmp_path / "tight"), "--max-requests", "1"]) != 0
        err = capsys.readouterr().err
        assert "budget" in err and "max_requests" in err and "Traceback" not in err, err
        assert server.count == 1 and not (tmp_path / "tight").exists()
        assert main([*args, "--out", str(tmp_path / "ok")]) == 0, capsys.readouterr().err
        sent = server.count - 1
    usage = json.loads((tmp_path / "ok" / "usage.json").read_text())
    assert sent > 1 and usage["per_model"][PRICED]["responses"] == usage["responses"] > sent
