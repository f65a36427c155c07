"""The chat reader builds ModelCalls and hands them to the run's executor (the openai SDK over HTTP
against the loopback server): one call per question, hypothesis lines carrying the request sha256 and
the parameters sent, the same cache keys as before the executor (a warm cache still hits)."""

from __future__ import annotations

import asyncio

import pytest

from mnemetric.execute import ImmediateExecutor
from mnemetric.llm.client import LLMClient
from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.components import ChatReader
from mnemetric.longmemeval.contexts import Context, ContextItem, ContextMessage
from mnemetric.longmemeval.reader.run import chat_calls
from tests.support.loopback import serve_isolated
from tests.support.openai_server import Fault

SENT = {"temperature": 0, "max_tokens": 800, "n": 1}
ITEMS = (ContextItem("s001", "up_s001", None, "2023/05/20 (Sat) 02:21",
                     (ContextMessage("user", "My cat is called Miso."),), False),)
QUERIES = [Query("q1", "What is my cat called?", "2023/06/01 (Thu) 09:00", ""),
           Query("q2", "What instrument do I play?", None, "")]
CONTEXTS = [Context(q.query_id, "bm25", "session", 10, 6000, "wordpunct-v1", 9, ITEMS) for q in QUERIES]


@pytest.fixture()
def server(tmp_path, monkeypatch):
    yield from serve_isolated(tmp_path, monkeypatch, "sk-test-READER")


def test_one_call_per_question_and_lines_carry_the_request_and_the_params_sent(server):
    reader = ChatReader(name="openai", model="gpt-4o-2024-08-06", base_url=server.base_url)
    calls = chat_calls(QUERIES, CONTEXTS, reader.__dict__)
    assert [(c.role, c.tag, c.endpoint, c.params_sent) for c in calls] == [("reader", "q1", "chat", SENT),
                                                                           ("reader", "q2", "chat", SENT)]
    with ImmediateExecutor({}, progress=False) as ex:
        answered = reader.answer(QUERIES, CONTEXTS, ex)
        assert ex.usage.requests_sent == 2 and ex.usage.work.to_dict()["responses"] == 2
    assert [h["question_id"] for h in answered.hypotheses] == ["q1", "q2"] and answered.failures == []
    assert [h["request_sha256"] for h in answered.hypotheses] == [c.key for c in calls]
    assert all(h["params_sent"] == SENT for h in answered.hypotheses)
    bodies = [r.body for r in server.requests]
    assert all({k: b[k] for k in SENT} == SENT for b in bodies)  # what the lines say is what the server got


def test_a_cache_warmed_before_the_executor_still_hits(server, monkeypatch):
    """Keys are unchanged: a reply cached by the client directly (the path every earlier run took),
    with the endpoint given by OPENAI_BASE_URL (trailing slash), is what the executor finds."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    reader = ChatReader(name="openai", model="gpt-4o-2024-08-06")  # base_url None: the environment's
    calls = chat_calls(QUERIES, CONTEXTS, reader.__dict__)
    with LLMClient() as client:  # the pre-executor path: client.chat with the request as a dict
        old = [asyncio.run(client.chat(c.model, c.messages, **SENT)) for c in calls]
    assert [r.request_sha256 for r in old] == [c.key for c in calls]
    sent = server.count
    with ImmediateExecutor({}, progress=False) as ex:
        answered = reader.answer(QUERIES, CONTEXTS, ex)
        assert ex.usage.cache_hits == 2 and ex.usage.requests_sent == 0
    assert server.count == sent
    assert [h["hypothesis"] for h in answered.hypotheses] == [r.text for r in old]


def test_a_dry_run_plans_through_the_executor_and_a_non_answer_is_a_failure(server):
    reader = ChatReader(name="openai", model="gpt-4o-2024-08-06", base_url=server.base_url)
    with ImmediateExecutor({"non_answer_attempts": 1}, progress=False) as ex:
        assert reader.plan(QUERIES, CONTEXTS, ex)["to_send"] == 2 and server.count == 0
        server.add_faults(Fault.non_answer("null_content"))
        answered = reader.answer(QUERIES[:1], CONTEXTS[:1], ex)
        assert reader.plan(QUERIES, CONTEXTS, ex)["to_send"] == 2  # a non-answer is never cached
    assert answered.hypotheses == []
    (failure,) = answered.failures
    assert (failure.question_id, failure.stage, failure.request_sha256) == ("q1", "answer", chat_calls(
        QUERIES[:1], CONTEXTS[:1], reader.__dict__)[0].key)
