"""Non-answers (null/empty content, no choices, refusal, content_filter) against the real local
server, through the real openai SDK: never cached, never a text, retried a bounded number of times.

Before this change a ``content: null`` reply became the text "" (the judge's label "no") and was
cached for good; "no choices" was retried as a malformed reply and then failed the whole batch.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.batch import embed_batch, plan_batch, run_batch  # noqa: E402
from tests.support.openai_server import NON_ANSWERS, FakeOpenAIServer, Fault  # noqa: E402

from mnemetric.llm import (  # noqa: E402
    CACHE_FILENAME,
    Budget,
    BudgetExceeded,
    ChatRequest,
    LLMClient,
    PriceTable,
    ResponseCache,
    key_payload,
    non_answer_reason,
    request_key,
)

SECRET = "sk-test-NONANSWER"
REASONS = {"null_content": "content is null", "empty_content": "content is empty", "no_choices": "no choices",
           "refusal": "refusal: I can't help with that.", "content_filter": "finish_reason 'content_filter'"}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def make_client(server, **kw) -> LLMClient:
    settings = dict(base_url=server.base_url, api_key=SECRET, timeout=5.0, backoff_base=0.01, backoff_cap=0.02,
                    role="judge")
    settings.update(kw)
    return LLMClient(**settings)


def ask(i: int) -> ChatRequest:
    return ChatRequest("gpt-test", [{"role": "user", "content": f"question {i}"}], {"temperature": 0, "max_tokens": 10})


def rows(cache_dir: Path) -> int:
    with contextlib.closing(sqlite3.connect(cache_dir / CACHE_FILENAME)) as conn:
        return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


@pytest.mark.parametrize("kind", NON_ANSWERS)
def test_a_non_answer_is_a_failure_not_a_text_and_is_never_cached(server, cache_dir, kind):
    server.non_answer_for = lambda body: kind if body["messages"][0]["content"] == "question 1" else None
    client = make_client(server, non_answer_attempts=2)
    results = run_batch(client, [ask(0), ask(1), ask(2)])
    assert [r.ok for r in results] == [True, False, True]  # the batch went on
    failed = results[1]
    assert failed.reason == REASONS[kind] and failed.text == "" and failed.texts == ()
    assert failed.attempts == 2 and not failed.cached
    assert server.count == 4  # question 1 was asked twice (one bounded retry), the others once
    assert rows(cache_dir) == 2  # only the two usable answers
    assert client.stats.non_answers == 2 and client.stats.requests_sent == 4
    assert client.stats.work.to_dict()["responses"] == 2  # a non-answer is not used: not in the work

    again = run_batch(make_client(server, non_answer_attempts=1), [ask(0), ask(1), ask(2)])
    assert [r.cached for r in again] == [True, False, True]
    assert again[1].reason == REASONS[kind] and again[1].attempts == 1
    assert server.count == 5  # a rerun asks the failed question again, and only it


def test_a_transient_non_answer_is_retried_and_the_answer_cached(server, cache_dir):
    server.add_faults(Fault.non_answer("null_content"))
    client = make_client(server)
    result = run_batch(client, [ask(0)])[0]
    assert result.ok and result.text == "echo: question 0" and result.attempts == 2
    assert server.count == 2 and rows(cache_dir) == 1
    assert client.stats.retries == 1 and client.stats.non_answers == 1


def test_non_answer_attempts_bound_the_retries(server):
    server.non_answer_for = lambda body: "refusal"
    result = run_batch(make_client(server, non_answer_attempts=3), [ask(0)])[0]
    assert result.reason.startswith("refusal") and result.attempts == 3
    assert server.count == 3


def test_each_non_answer_attempt_is_a_paid_request_under_the_budget(server):
    server.non_answer_for = lambda body: "empty_content"
    client = make_client(server, non_answer_attempts=3, budget=Budget(max_requests=2))
    with pytest.raises(BudgetExceeded, match="max_requests=2"):
        run_batch(client, [ask(0)])
    assert server.count == 2


def test_a_non_answer_stored_by_an_older_version_is_evicted_and_asked_again(server, cache_dir):
    payload = key_payload("chat", server.base_url, "gpt-test", ask(0).messages, ask(0).params)
    key = request_key(payload)
    stored = {"model": "gpt-test", "choices": [{"index": 0, "message": {"role": "assistant", "content": None},
                                                "finish_reason": "stop"}]}
    with ResponseCache(cache_dir / CACHE_FILENAME) as cache:
        cache.put(key, payload, stored)  # what the old client wrote for a content: null reply
    client = make_client(server)
    assert plan_batch(client, [ask(0)])["to_send"] == 1  # a dry run does not count it as cached
    result = run_batch(client, [ask(0)])[0]
    assert result.ok and not result.cached and result.text == "echo: question 0"
    assert server.count == 1
    with ResponseCache(cache_dir / CACHE_FILENAME) as cache:
        assert non_answer_reason(cache.get(key)) is None  # the usable answer replaced it


def test_failed_requests_leave_no_claim_behind(server, cache_dir):
    server.non_answer_for = lambda body: "no_choices"
    run_batch(make_client(server, non_answer_attempts=1), [ask(0), ask(1)])
    with ResponseCache(cache_dir / CACHE_FILENAME) as cache:
        assert cache.claims() == [] and len(cache) == 0


@pytest.mark.parametrize(("data", "reason"), [
    ({"choices": []}, "no choices"),
    ({}, "no choices"),
    ({"choices": [{"message": {"content": "  \n"}, "finish_reason": "stop"}]}, "content is empty"),
    ({"choices": [{"message": {"content": "yes"}, "finish_reason": "tool_calls"}]}, "finish_reason 'tool_calls'"),
    ({"choices": [{"message": {"content": "yes"}}]}, "finish_reason None"),
    ({"choices": [{"message": {"content": ["yes"]}, "finish_reason": "stop"}]}, "content is not a string (list)"),
    ({"choices": [{"message": {"content": "yes", "refusal": "no way"}, "finish_reason": "stop"}]}, "refusal: no way"),
    ({"choices": [{"index": 0, "message": {"content": "yes"}, "finish_reason": "stop"},
                  {"index": 1, "message": {"content": None}, "finish_reason": "stop"}]}, "choice 1: content is null"),
    ({"choices": [{"message": {"content": "Yes.", "refusal": None}, "finish_reason": "stop"}]}, None),
    ({"choices": [{"message": {"content": "Yes, the"}, "finish_reason": "length"}]}, None),  # cut off, still an answer
])
def test_the_non_answer_rule(data, reason):
    assert non_answer_reason(data) == reason


def test_usable_answers_keep_their_prices(server):
    prices = PriceTable.from_dict({"gpt-test": {"input": 1.0, "output": 1.0}})
    server.non_answer_for = lambda body: "null_content" if body["messages"][0]["content"] == "question 1" else None
    client = make_client(server, prices=prices, non_answer_attempts=1)
    ok, failed = run_batch(client, [ask(0), ask(1)])
    assert ok.cost_usd == pytest.approx(7e-6)  # 3 prompt + 4 completion tokens at $1 / 1M
    assert failed.cost_usd == pytest.approx(3e-6)  # the non-answer's 3 prompt tokens (paid, see run counters)
    assert client.stats.usd == pytest.approx(10e-6)
    assert client.stats.work.to_dict()["usd"] == pytest.approx(7e-6)


def test_the_server_script_can_answer_with_non_answers(tmp_path):
    import signal
    import subprocess

    script = ROOT / "tests" / "support" / "openai_server.py"
    cmd = [sys.executable, str(script), "--port", "0", "--non-answer", "content_filter"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        try:
            base_url = proc.stdout.readline().split()[-1]
            client = LLMClient(base_url=base_url, api_key=SECRET, use_cache=False, non_answer_attempts=1)
            result = run_batch(client, [ask(0)])[0]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    assert result.reason == "finish_reason 'content_filter'"
