"""The upstream judge builds ModelCalls and hands them to the run's executor (openai SDK over HTTP,
loopback server): each judged line's trace names the request sha256 and the parameters actually sent;
the keys are those of the pre-executor path (a warm cache still hits)."""

from __future__ import annotations

import asyncio

import pytest

from mnemetric.execute import ImmediateExecutor
from mnemetric.llm.client import LLMClient
from mnemetric.longmemeval.judge.run import judge_upstream_outcome, upstream_calls
from mnemetric.longmemeval.judge.upstream_prompts import TEMPLATE_KEYS, PromptSet
from mnemetric.longmemeval.judgments import JudgeTrace
from mnemetric.longmemeval.reference import Reference
from tests.support.loopback import serve_isolated
from tests.support.openai_server import Fault

UPSTREAM = {"temperature": 0, "max_tokens": 10, "n": 1}
PROMPTS = PromptSet({k: f"[{k}] Q {{}} A {{}} H {{}}" for k in TEMPLATE_KEYS}, "e" * 64)
HYPS = [{"question_id": "q1", "hypothesis": "Miso"}, {"question_id": "q2", "hypothesis": "the cello"},
        {"question_id": "q1", "hypothesis": "Miso"}]  # a repeated hypothesis: one request
REFS = {"q1": Reference("q1", "single-session-user", "What is my cat called?", "Miso"),
        "q2": Reference("q2", "multi-session", "What do I play?", "violin")}


def spec(base_url: str | None) -> dict:
    return {"name": "upstream-gpt-4o", "model": "gpt-4o-2024-08-06", "base_url": base_url, **UPSTREAM}


@pytest.fixture()
def server(tmp_path, monkeypatch):
    yield from serve_isolated(tmp_path, monkeypatch, "sk-test-JUDGE")


def test_judged_lines_carry_the_request_sha256_and_the_params_sent(server):
    calls = upstream_calls(HYPS, REFS, PROMPTS, spec(server.base_url), "hyp.jsonl")
    assert [(c.role, c.tag, c.params_sent) for c in calls] == [("judge", "q1", UPSTREAM), ("judge", "q2", UPSTREAM),
                                                              ("judge", "q1", UPSTREAM)]
    with ImmediateExecutor({}, progress=False) as ex:
        judged = judge_upstream_outcome(HYPS, REFS, PROMPTS, spec(server.base_url), ex, "hyp.jsonl")
        assert ex.usage.requests_sent == 2 and ex.usage.cache_hits == 1  # dedup: the repeat is sent once
    assert server.count == 2 and judged.failures == []
    for line, call in zip(judged.lines, calls, strict=True):
        trace = JudgeTrace.from_record(line["mnemetric_judge"], file="x", line=1).call
        assert trace.request_sha256 == call.key and trace.params_sent == UPSTREAM
        assert trace.endpoint == server.base_url
    assert all({k: r.body[k] for k in UPSTREAM} == UPSTREAM for r in server.requests)


def test_a_cache_warmed_before_the_executor_still_hits(server):
    calls = upstream_calls(HYPS, REFS, PROMPTS, spec(server.base_url), "hyp.jsonl")
    with LLMClient(base_url=server.base_url + "/") as client:  # the pre-executor path
        old = [asyncio.run(client.chat(c.model, c.messages, **UPSTREAM)).request_sha256 for c in calls]
    assert old == [c.key for c in calls]
    sent = server.count
    with ImmediateExecutor({}, progress=False) as ex:
        judged = judge_upstream_outcome(HYPS, REFS, PROMPTS, spec(server.base_url), ex, "hyp.jsonl")
        assert ex.usage.requests_sent == 0 and ex.usage.cache_hits == 3
    assert server.count == sent and len(judged.lines) == 3


def test_a_non_answer_is_a_failure_never_a_verdict(server):
    server.add_faults(Fault.non_answer("null_content"))
    with ImmediateExecutor({"non_answer_attempts": 1}, progress=False) as ex:
        judged = judge_upstream_outcome(HYPS[:1], REFS, PROMPTS, spec(server.base_url), ex, "hyp.jsonl")
    assert judged.lines == [] and [(f.question_id, f.stage) for f in judged.failures] == [("q1", "judge")]
