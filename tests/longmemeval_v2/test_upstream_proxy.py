"""Upstream's own V2 baselines that call models through OpenAI clients of their own (rag_query_to_slice: the
embedding model) talk to the loopback model proxy during the memory step, so their requests go through the run's
ONE executor: the run's budget stops them, the memory-side records count them (``memory_side``, the proxy's
per-phase record, the run's usage ledger), the response cache answers a rerun, and runtime_inputs/memory_config.json
stays upstream's. Opt-in: MNEMETRIC_LONGMEMEVAL_V2_DIR (a checkout at be15ea6, as tests/parity). Real openai SDK
(upstream's own clients and ours) against the loopback server; the embedding endpoint is a server of its own, so
what reaches it is the memory's and only the memory's."""

from __future__ import annotations

import json

import pytest

from mnemetric.execute import build_executor
from mnemetric.llm.budget import BudgetExceeded
from mnemetric.longmemeval_v2.pipeline import memory_factory, named_settings, run_from_settings
from mnemetric.longmemeval_v2.run import write_run
from mnemetric.longmemeval_v2.steps import memory_step
from tests.parity.test_v2_upstream_memory import (SAMPLE, _counter, _same_items, checkout,  # noqa: F401 (fixtures)
                                                  embedding_tokenizer, reply)
from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer

METHOD = "upstream-rag_query_to_slice"


@pytest.fixture
def env(tmp_path, monkeypatch, checkout):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MNEMETRIC_RUN_LOG", str(tmp_path / "run-log.jsonl"))


def _settings(tokenizer: str, embeddings: FakeOpenAIServer, controller: str = "http://127.0.0.1:9/v1"):
    params = {"embedding_params": {"model": tokenizer, "base_url": embeddings.base_url},
              "controller_params": {"base_url": controller}}
    return named_settings(SAMPLE, "small", memory=METHOD, memory_options={"params": params}, domains=["web"],
                          reader="openai", checker="llm", token_counter="o200k")


def _memory_step(settings, executor):
    from mnemetric.longmemeval_v2.validate import haystack_path

    factory, name = memory_factory({"memory": settings["memory"]})
    assert factory.uses_model_proxy
    return memory_step(SAMPLE, haystack_path(SAMPLE, "small"), ["web"], factory, counter=_counter(),
                       max_tokens=int(settings["max_tokens"]), system=name, mapper=executor)


def test_the_run_s_budget_stops_the_baseline_s_embedding_requests(env, embedding_tokenizer):
    with FakeOpenAIServer() as embeddings:
        executor = build_executor(None, {"budget": {"max_requests": 1}})
        try:
            with pytest.raises(BudgetExceeded, match="max_requests"):
                _memory_step(_settings(embedding_tokenizer, embeddings), executor)
        finally:
            executor.close()
        assert embeddings.count == 1 and embeddings.requests[0].path == "/v1/embeddings"
    assert executor.usage.requests_sent == 1


def test_memory_side_counts_the_baseline_s_requests_and_a_rerun_sends_none(env, embedding_tokenizer, capfd):
    with FakeOpenAIServer() as embeddings:
        settings = _settings(embedding_tokenizer, embeddings)
        executor = build_executor(None, {})
        try:
            rows, latencies = _memory_step(settings, executor)
        finally:
            executor.close()
        sent = embeddings.count
        assert sent >= 2 and {r.path for r in embeddings.requests} == {"/v1/embeddings"}
        side = latencies.memory_side["web"]
        assert side.requests_sent == sent == executor.usage.requests_sent
        assert side.work_responses == executor.usage.work.to_dict()["responses"] > 0
        cost = latencies.memory_cost
        assert cost["uses_model_proxy"] and cost["memory"] == METHOD
        phases = cost["systems"][METHOD]
        assert sum(b["requests"]["embeddings"] for b in phases.values()) == cost["requests"]["embeddings"] >= sent
        assert phases["ingest"]["requests"]["embeddings"] >= 1 and phases["query"]["requests"]["embeddings"] >= 1
        assert cost["requests"]["chat"] == 0  # rag_query_to_slice writes no notes
        assert "v2_memory: memory upstream-rag_query_to_slice through the model proxy" in capfd.readouterr().err
        log = [json.loads(line) for line in open("run-log.jsonl", encoding="utf-8")]
        assert any(e.get("memory_proxy", {}).get("memory") == METHOD for e in log)

        again = build_executor(None, {})
        try:
            rows2, latencies2 = _memory_step(settings, again)
        finally:
            again.close()
        assert embeddings.count == sent  # the response cache answered every request of the rerun
        assert [_same_items(r.memory_context) for r in rows2] == [_same_items(r.memory_context) for r in rows]
        assert latencies2.memory_side["web"].requests_sent == 0 and latencies2.memory_side["web"].cache_served > 0
        assert latencies2.memory_cost["requests"] == cost["requests"]
        assert latencies2.memory_cost["usage"] == cost["usage"]  # the cost of the work: the same warm


def test_v2_run_routes_the_baseline_through_its_budget_and_writes_memory_cost(env, embedding_tokenizer, tmp_path,
                                                                             capsys):
    """`mnemetric v2 run` with a project's rag option (its endpoints set): --max-requests 1 stops it with the budget
    error (no traceback, no output folder); unbounded, OUT/memory_cost.json and OUT/usage.json count the memory's
    requests; a rerun sends nothing; runtime_inputs/memory_config.json names the real endpoints, never the proxy."""
    from mnemetric.cli import main

    with FakeOpenAIServer() as embeddings:
        folder = tmp_path / "conf" / "v2" / "memory"
        folder.mkdir(parents=True)
        shipped = (ROOT / "src" / "mnemetric" / "conf" / "v2" / "memory" / f"{METHOD}.yaml").read_text()
        (folder / "rag-here.yaml").write_text(shipped.replace("params: {}", json.dumps({"params": {
            "embedding_params": {"model": embedding_tokenizer, "base_url": embeddings.base_url},
            "controller_params": {"base_url": "http://127.0.0.1:9/v1"}}})[1:-1]).replace(
            f"name: {METHOD}", "name: rag-here"))
        args = ["v2", "run", str(SAMPLE), "--haystack", "small", "--domain", "web", "--memory", "rag-here",
                "--token-counter", "o200k", "--conf", str(tmp_path / "conf")]
        assert main([*args, "--out", str(tmp_path / "tight"), "--max-requests", "1"]) != 0
        err = capsys.readouterr().err
        assert "budget" in err and "max_requests" in err and "Traceback" not in err, err
        assert embeddings.count == 1 and not (tmp_path / "tight").exists()
        assert main([*args, "--out", str(tmp_path / "ok")]) == 0, capsys.readouterr().err
        sent = embeddings.count - 1
        assert main([*args, "--out", str(tmp_path / "again")]) == 0, capsys.readouterr().err
        assert embeddings.count == sent + 1  # the rerun: every request answered by the response cache
    cost = json.loads((tmp_path / "ok" / "memory_cost.json").read_text())
    assert cost["memory"] == "rag-here" and cost["uses_model_proxy"] and cost["requests"]["embeddings"] >= sent > 1
    assert json.loads((tmp_path / "again" / "memory_cost.json").read_text()) == cost
    usage = json.loads((tmp_path / "ok" / "usage.json").read_text())
    assert usage["per_model"][embedding_tokenizer]["responses"] > 0
    text = (tmp_path / "ok" / "web" / "runtime_inputs" / "memory_config.json").read_text()
    assert embeddings.base_url in text and "127.0.0.1:9/v1" in text and "/r1/v1" not in text


def test_a_whole_run_routes_the_memory_and_keeps_upstream_s_memory_config(env, embedding_tokenizer, tmp_path,
                                                                          monkeypatch):
    """`mnemetric v2 run`'s path (run_from_settings): the memory's requests reach its own endpoint through the
    executor, the reader's the reader's; a rerun sends nothing anywhere; memory_config.json names the real
    endpoint, never the proxy."""
    with FakeOpenAIServer(reply=reply) as reader, FakeOpenAIServer() as embeddings:
        monkeypatch.setenv("OPENAI_BASE_URL", reader.base_url)  # the reader's and the checker's endpoint
        settings = _settings(embedding_tokenizer, embeddings)
        first = run_from_settings(settings, build_executor(None, {}))
        n_reader, n_memory = reader.count, embeddings.count
        assert n_memory >= 2 and {r.path for r in reader.requests} == {"/v1/chat/completions"}
        run_from_settings(settings, build_executor(None, {}))
        assert (reader.count, embeddings.count) == (n_reader, n_memory)
    write_run(tmp_path / "out", first, settings)
    text = (tmp_path / "out" / "web" / "runtime_inputs" / "memory_config.json").read_text()
    assert embeddings.base_url in text and "127.0.0.1:9/v1" in text and "/r1/v1" not in text


def test_stage_v2_memory_writes_the_baseline_s_requests_per_phase(env, embedding_tokenizer, tmp_path, monkeypatch):
    """Stage v2_memory (params.yaml composed from conf/): memory-cost.json holds the requests per phase (the same
    bytes on a rerun the cache answers), memory-usage.json their work; with executor.workers 2 the memory is still
    built here (its clients talk to this process's proxy)."""
    from mnemetric.stages import v2_memory, v2_prepare
    from tests.longmemeval_v2.test_selection import _stage_workspace

    with FakeOpenAIServer() as embeddings:
        ws, _ = _stage_workspace(tmp_path, monkeypatch, f"v2/memory={METHOD}", "v2.haystack=medium",
                                 "executor.workers=2", "llm.budget.max_usd=null",
                                 f"+v2.memory.params.embedding_params.model={embedding_tokenizer}",
                                 f"+v2.memory.params.embedding_params.base_url={embeddings.base_url}")
        v2_prepare.main()
        v2_memory.main()
        sent = embeddings.count
        path = ws / "data" / "v2-runs" / "memory-cost.json"
        cold = path.read_bytes()
        v2_memory.main()
        assert embeddings.count == sent > 1
    assert path.read_bytes() == cold
    cost = json.loads(cold)
    assert cost["uses_model_proxy"] and set(cost["systems"][METHOD]) == {"ingest", "query"}
    assert cost["requests"]["embeddings"] >= sent
    usage = json.loads((ws / "data" / "v2-runs" / "memory-usage.json").read_text())
    assert usage["per_model"][embedding_tokenizer]["responses"] == cost["usage"]["responses"] > 0
