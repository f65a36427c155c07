"""The V1 upstream judge with ``-S executor=batch`` (composed from conf as `dvc exp run` composes it) writes
judged lines byte-identical to the immediate executor's, on the same loopback server: the batch executor
changes how requests travel and what they cost (half, in the usage sidecar), never a verdict or a trace."""

from __future__ import annotations

from mnemetric.cli.registry import composed
from mnemetric.config import package_conf_dir
from mnemetric.execute import build_executor
from mnemetric.llm.usage import write_usage
from mnemetric.longmemeval.components import write_judged
from mnemetric.longmemeval.judge.run import judge_upstream_outcome
from tests.longmemeval.judge.test_upstream_calls import HYPS, PROMPTS, REFS, spec
from tests.support.openai_server import FakeOpenAIServer


def judge_with(cfg: dict, executor: dict | None, out, monkeypatch, server) -> dict:
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(out / "cache"))
    with build_executor(executor, cfg["llm"], progress=False) as ex:
        judged = judge_upstream_outcome(HYPS, REFS, PROMPTS, spec(server.base_url), ex, "hyp.jsonl")
        write_judged(out / "judged.jsonl", judged)
        write_usage(out / "usage.json", ex.usage.work)
        return ex.usage.work.to_dict()


def test_a_batch_judge_writes_the_same_bytes_as_the_immediate_one(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-JUDGE")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as server:
        server.batch.auto = True
        cfg = composed(package_conf_dir(), ["executor=batch", "executor.poll_interval=0.01"])
        assert cfg["executor"]["name"] == "batch"
        live = judge_with(cfg, None, tmp_path / "live", monkeypatch, server)  # None: the immediate default
        sent = server.count
        batched = judge_with(cfg, cfg["executor"], tmp_path / "batch", monkeypatch, server)
        assert server.count == sent and len(server.batch.submitted) == 2  # the repeated hypothesis: once
    for name in ("judged.jsonl", "judged.jsonl.failures.jsonl"):
        assert (tmp_path / "batch" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()
    assert batched["usd"] == live["usd"] * 0.5 and batched["batch_responses"] == 3
