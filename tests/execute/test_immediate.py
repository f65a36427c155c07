"""The immediate executor over real HTTP (the openai SDK against the loopback server)."""

from __future__ import annotations

import pytest

from mnemetric.execute import ANSWER, FAILURE, NON_ANSWER, ImmediateExecutor, ModelCall
from mnemetric.llm.cache import key_payload, request_key
from mnemetric.llm.types import LLMRequestError
from tests.support.openai_server import Fault, FakeOpenAIServer


@pytest.fixture()
def server():
    with FakeOpenAIServer() as s:
        yield s


def _call(server, text, **kw):
    return ModelCall.chat(role="judge", model="m", messages=[{"role": "user", "content": text}],
                          params={"temperature": 0, "max_tokens": 5, "timeout": 3}, base_url=server.base_url, **kw)


def test_the_key_is_the_cache_key_and_transport_options_stay_out_of_it(server):
    call = _call(server, "hello")
    payload = key_payload("chat", server.base_url, "m", [{"role": "user", "content": "hello"}],
                          {"temperature": 0, "max_tokens": 5})
    assert call.key == request_key(payload)
    assert call.params_sent == {"temperature": 0, "max_tokens": 5}
    assert call.messages == [{"role": "user", "content": "hello"}]
    call.messages[0]["content"] = "changed"  # a copy: the call is immutable
    assert call.messages[0]["content"] == "hello"


def test_outcomes_in_call_order_with_params_sent_and_one_ledger(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    calls = [_call(server, f"q{i}") for i in range(5)] + [_call(server, "q0")]
    with ImmediateExecutor({"max_concurrency": 2}, progress=False) as ex:
        out = ex.run(calls)
        assert [o.kind for o in out] == [ANSWER] * 6
        assert [o.key for o in out] == [c.key for c in calls]
        assert all(o.params_sent == {"temperature": 0, "max_tokens": 5} for o in out)
        assert server.count == 5  # the repeated call was sent once
        assert ex.usage.requests_sent == 5 and ex.usage.cache_hits == 1
        again = ex.run(calls)
        assert server.count == 5 and [o.text for o in again] == [o.text for o in out]
        assert all(o.cached for o in again)


def test_a_non_answer_is_an_outcome_never_an_answer(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.add_faults(Fault.non_answer("null_content"), Fault.non_answer("null_content"))
    with ImmediateExecutor({"non_answer_attempts": 2}, progress=False) as ex:
        [out] = ex.run([_call(server, "x")])
    assert out.kind == NON_ANSWER and out.reason and out.text == ""


def test_a_tolerated_status_fails_the_call_and_an_untolerated_one_stops_the_run(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.add_faults(Fault.status_code(400))
    with ImmediateExecutor({}, progress=False) as ex:
        [out] = ex.run([_call(server, "x", tolerate=(400,))])
        assert out.kind == FAILURE and out.status == 400
        server.add_faults(Fault.status_code(400))
        with pytest.raises(LLMRequestError):
            ex.run([_call(server, "y")])


def test_one_budget_for_every_server_the_run_talks_to(monkeypatch):
    from mnemetric.llm.budget import BudgetExceeded

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        with ImmediateExecutor({"budget": {"max_requests": 3}}, progress=False) as ex:
            ex.run([_call(a, "1"), _call(a, "2")])
            with pytest.raises(BudgetExceeded):
                ex.run([_call(b, "3"), _call(b, "4")])
        assert a.count + b.count == 3


def test_embedding_calls_come_back_as_vectors(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    calls = [ModelCall.embedding(role="memory", model="e", text=t, base_url=server.base_url) for t in ("a", "b", "a")]
    with ImmediateExecutor({}, progress=False) as ex:
        out = ex.run(calls)
    assert [o.kind for o in out] == [ANSWER] * 3
    assert out[0].embedding == out[2].embedding and out[0].embedding != out[1].embedding


def test_a_dry_run_reads_the_cache_only(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ImmediateExecutor({}, progress=False) as ex:
        plan = ex.plan([_call(server, "a"), _call(server, "b")])
    assert plan["requests_total"] == 2 and plan["to_send"] == 2 and server.count == 0


def test_the_key_is_the_one_a_client_computed_before_the_executor(server, monkeypatch, tmp_path):
    """A cache warmed by LLMClient.chat (every run before the executor) is hit: same key, whether the
    endpoint is given, given with a trailing slash, or read from OPENAI_BASE_URL."""
    import asyncio

    from mnemetric.llm.client import LLMClient

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    msgs = [{"role": "user", "content": "warm"}]
    with LLMClient(base_url=server.base_url + "/") as client:
        old = asyncio.run(client.chat("m", msgs, temperature=0, max_tokens=5, timeout=3)).request_sha256
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    for base_url in (server.base_url, server.base_url + "/", None):
        call = ModelCall.chat(role="judge", model="m", messages=msgs, params={"temperature": 0, "max_tokens": 5},
                              base_url=base_url)
        assert call.key == old
    with ImmediateExecutor({}, progress=False) as ex:
        [out] = ex.run([call])
    assert out.cached and server.count == 1


def test_credentials_in_the_base_url_reach_the_server_but_not_the_key_or_repr(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with_creds = server.base_url.replace("http://", "http://user:s3cr3t-pw@")
    call = ModelCall.chat(role="reader", model="m", messages=[{"role": "user", "content": "x"}], base_url=with_creds)
    plain = ModelCall.chat(role="reader", model="m", messages=[{"role": "user", "content": "x"}],
                           base_url=server.base_url)
    assert call.base_url == server.base_url and call.key == plain.key and "s3cr3t" not in repr(call)
    with ImmediateExecutor({}, progress=False) as ex:
        [out] = ex.run([call])
        assert [c._base_url_arg for c in ex._clients.values()] == [with_creds]  # the transport got the URL as given
    assert out.ok and server.count == 1


def test_a_reader_and_a_judge_at_one_server_each_get_their_own_client(server, monkeypatch, tmp_path):
    """Clients are keyed by (base URL, role): the role of the first call no longer decides the second's.
    Each response is cached under the role that asked for it, and both share the one budget and ledger."""
    from mnemetric.llm.cache import ResponseCache

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    reader = ModelCall.chat(role="reader", model="m", messages=[{"role": "user", "content": "r"}],
                            base_url=server.base_url)
    judge = _call(server, "j")
    cache = ResponseCache(tmp_path / "c.sqlite")
    with ImmediateExecutor({}, progress=False, cache=cache) as ex:
        ex.run([reader, judge])
        r, j = ex.client(server.base_url, "reader"), ex.client(server.base_url, "judge")
        assert r is not j and (r.role, j.role) == ("reader", "judge")
        assert r.stats is j.stats is ex.usage and r.budget is j.budget is ex.budget
        assert ex.usage.requests_sent == 2 == server.count
    stages = {row.key: row.stage for row in cache.rows()}
    assert stages == {reader.key: "reader", judge.key: "judge"}  # before: both "reader" (the first call's)
    cache.close()


def test_an_executor_around_a_client_uses_its_cache_budget_and_ledger(server, monkeypatch, tmp_path):
    from mnemetric.llm.budget import Budget, BudgetExceeded
    from mnemetric.llm.client import LLMClient

    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    client = LLMClient(base_url=server.base_url, api_key="sk-test", budget=Budget(max_requests=1))
    ex = ImmediateExecutor.around(client)
    assert ex.usage is client.stats and ex.budget is client.budget and ex.cache is client.cache
    ex.run([_call(server, "a")])
    with pytest.raises(BudgetExceeded):
        ex.run([_call(server, "b")])
    assert client.stats.requests_sent == 1 == server.count
    client.close()


def test_record_work_counts_embedding_work_from_cached_rows_and_sends_nothing(server, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    calls = [ModelCall.embedding(role="embeddings", model="e", text=t, base_url=server.base_url, batch_size=1)
             for t in ("alpha", "beta")]
    with ImmediateExecutor({}, progress=False) as cold:
        cold.run(calls)
    assert server.count == 2  # batch_size 1: one request per text
    with ImmediateExecutor({}, progress=False) as warm:
        warm.record_work(calls)
    assert server.count == 2 and warm.usage.requests_sent == 0
    assert warm.usage.work.to_dict() == cold.usage.work.to_dict()
