"""LLMClient against a real local HTTP server, through the real openai SDK (no internet)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from email.utils import formatdate
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR.parent) not in sys.path:  # the repository root, so ``tests.support`` imports
    sys.path.insert(0, str(TESTS_DIR.parent))

from tests.support.batch import embed_batch, plan_batch, run_batch  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, Fault, canonical_sha256, fake_embedding  # noqa: E402

from mnemetric.errors import MnemetricError  # noqa: E402
from mnemetric.llm import (  # noqa: E402
    CACHE_FILENAME,
    Budget,
    BudgetExceeded,
    ChatRequest,
    LLMClient,
    LLMRequestError,
    PriceTable,
    ResponseCache,
    UsageStats,
    default_cache_dir,
    key_payload,
    normalize_base_url,
    parse_retry_after,
    plan,
    request_key,
)

SECRET = "sk-test-SECRET123"
SRC_DIR = TESTS_DIR.parent / "src"
SERVER_SCRIPT = TESTS_DIR / "support" / "openai_server.py"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test gets its own cache folder and no ambient OpenAI settings."""
    path = tmp_path / "cache"
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def make_client(server: FakeOpenAIServer, **kw) -> LLMClient:
    settings = dict(base_url=server.base_url, api_key=SECRET, timeout=5.0, backoff_base=0.01, backoff_cap=0.05)
    settings.update(kw)
    return LLMClient(**settings)


def ask(i: int, model: str = "gpt-test", **params) -> ChatRequest:
    return ChatRequest(model, [{"role": "user", "content": f"question {i}"}], params)


def run(client: LLMClient, *reqs: ChatRequest):
    return run_batch(client, list(reqs))


# -- cache ------------------------------------------------------------------------------------------
def test_second_identical_run_is_served_from_cache(server, cache_dir):
    client = make_client(server)
    first = run(client, ask(0), ask(1), ask(2))
    assert server.count == 3 and not any(r.cached for r in first)
    second = run(client, ask(0), ask(1), ask(2))
    assert server.count == 3
    assert all(r.cached for r in second)
    assert [r.text for r in second] == [r.text for r in first] == [f"echo: question {i}" for i in range(3)]
    assert [r.request_sha256 for r in second] == [r.request_sha256 for r in first]
    assert (cache_dir / CACHE_FILENAME).exists()
    assert client.stats.cache_hits == 3 and client.stats.requests_sent == 3


def test_key_ignores_timeout_concurrency_retries_and_key(server):
    run(make_client(server), ask(0, temperature=0), ask(1, temperature=0))
    other = make_client(server, api_key="sk-other", timeout=33.0, max_concurrency=1, max_attempts=2,
                        backoff_base=3.0)
    results = run(other, ask(0, temperature=0, timeout=9.0), ask(1, temperature=0))
    assert all(r.cached for r in results)
    assert server.count == 2


def test_key_differs_on_temperature_and_other_output_params(server):
    client = make_client(server)
    run(client, ask(0, temperature=0))
    assert run(client, ask(0, temperature=0.0))[0].cached  # 0 and 0.0 are the same request
    assert not run(client, ask(0, temperature=0.7))[0].cached
    assert not run(client, ask(0, temperature=0, max_tokens=5))[0].cached
    assert server.count == 3


def test_key_is_canonical_and_excludes_transport_options():
    base = key_payload("chat", "http://h/v1/", "m", [{"role": "user", "content": "x"}], {"seed": 1, "top_p": 1.0})
    same = key_payload("chat", "http://h/v1", "m", [{"content": "x", "role": "user"}],
                       {"top_p": 1, "seed": 1, "timeout": 3, "extra_headers": {"a": "b"}})
    assert request_key(base) == request_key(same)
    assert request_key(base) != request_key(key_payload("embeddings", "http://h/v1", "m", "x", {}))
    assert request_key(base) != request_key(key_payload("chat", "http://other/v1", "m",
                                                        [{"role": "user", "content": "x"}], {"seed": 1}))


def test_embeddings_are_cached_per_text(server):
    client = make_client(server)
    vectors = embed_batch(client, "emb-test", ["alpha", "beta", "alpha"])
    assert vectors == [fake_embedding("alpha"), fake_embedding("beta"), fake_embedding("alpha")]
    assert server.count == 1 and server.requests[0].body["input"] == ["alpha", "beta"]
    again = embed_batch(client, "emb-test", ["beta", "gamma"])
    assert again == [fake_embedding("beta"), fake_embedding("gamma")]
    assert server.count == 2 and server.requests[1].body["input"] == ["gamma"]


@pytest.mark.parametrize("use_cache", [True, False])
def test_identical_requests_in_one_batch_are_sent_once(server, use_cache):
    server.latency = 0.1  # both copies would be on the wire at once
    prices = PriceTable.from_dict({"gpt-test": {"input": 1.0, "output": 1.0}})
    client = make_client(server, use_cache=use_cache, prices=prices)
    results = run(client, ask(0), ask(1), ask(0, temperature=0.0), ask(0), ask(0, temperature=0))
    assert server.count == 3  # ask(0), ask(1), ask(0, temperature=0)
    assert sorted(Counter(server.keys()).values()) == [1, 1, 1]
    assert [r.cached for r in results] == [False, False, False, True, True]
    assert results[3].text == results[0].text and results[3].request_sha256 == results[0].request_sha256
    assert results[4].request_sha256 == results[2].request_sha256 != results[0].request_sha256
    # "question N" = 3 prompt tokens, "echo: question N" = 4 completion tokens, $1 per 1M each way
    assert [r.cost_usd for r in results] == pytest.approx([7e-6] * 5)  # the cost of the work, copies too
    assert client.stats.requests_sent == 3 and client.stats.cache_hits == 2
    assert client.stats.usd == pytest.approx(3 * 7e-6)  # paid this run: the three sent
    assert client.stats.per_model["gpt-test"].cache_hits == 2
    work = client.stats.work.to_dict()
    assert (work["responses"], work["prompt_tokens"], work["completion_tokens"]) == (5, 15, 20)
    assert work["usd"] == pytest.approx(5 * 7e-6)


def test_repeated_texts_in_one_embed_call_are_sent_once_and_count_as_hits(server):
    client = make_client(server)
    assert embed_batch(client, "emb-test", ["a", "b", "a", "a"]) == [fake_embedding(t) for t in "abaa"]
    assert server.count == 1 and server.requests[0].body["input"] == ["a", "b"]
    assert client.stats.requests_sent == 1 and client.stats.cache_hits == 2


def test_embed_chunk_failure_keeps_the_chunks_already_answered(server, cache_dir):
    # two chunks on the wire at once: the first to arrive answers slowly, the second fails at once
    server.add_faults(Fault.slow(0.5), Fault.status_code(400))
    client = make_client(server, embed_batch_size=2, max_concurrency=2)
    texts = ["t1", "t2", "t3", "t4"]
    with pytest.raises(LLMRequestError, match="HTTP 400"):
        embed_batch(client, "emb-test", texts)
    assert server.count == 2
    wait_for(lambda: server.answered == 1)  # the server notes a status just after writing the reply
    ok, bad = sorted(server.requests, key=lambda r: r.status != 200)
    assert (ok.status, bad.status) == (200, 400)
    assert len(client.cache) == 2  # the slow chunk finished and was cached before the error was raised
    assert embed_batch(client, "emb-test", texts) == [fake_embedding(t) for t in texts]
    assert server.count == 3 and server.requests[-1].body["input"] == bad.body["input"]


def test_embed_starts_no_new_chunk_after_an_error(server):
    server.add_faults(Fault.unauthorized())
    client = make_client(server, embed_batch_size=1, max_concurrency=1)
    with pytest.raises(LLMRequestError, match="OPENAI_API_KEY"):
        embed_batch(client, "emb-test", ["a", "b", "c"])
    assert server.count == 1


def test_concurrent_writers_share_one_cache_file(cache_dir):
    path = cache_dir / CACHE_FILENAME

    def writer(tag: str) -> None:
        with ResponseCache(path) as cache:
            for i in range(100):
                payload = {"kind": "chat", "model": "m", "messages": [tag, i]}
                cache.put(request_key(payload), payload, {"i": i})

    threads = [threading.Thread(target=writer, args=(t,)) for t in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with ResponseCache(path) as cache:
        assert len(cache) == 300


def test_base_url_and_key_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = LLMClient()
    assert client.base_url == server.base_url
    assert run(client, ask(0))[0].text == "echo: question 0"
    assert run(client) == []


def test_missing_api_key_says_what_to_set_when_a_request_must_be_sent(server):
    client = LLMClient(base_url=server.base_url, use_cache=False)  # no key: building the client is fine
    assert client.base_url == server.base_url
    with pytest.raises(LLMRequestError, match="set OPENAI_API_KEY"):
        run(client, ask(0))
    assert server.count == 0


def test_a_plan_needs_no_api_key_and_sends_nothing(server, cache_dir):
    run(make_client(server), ask(0))  # one answer in the cache, paid with a key
    client = LLMClient(base_url=server.base_url)  # OPENAI_API_KEY unset (autouse fixture)
    assert plan_batch(client, [ask(0), ask(1)])["cached"] == 1
    assert run(client, ask(0))[0].cached  # a fully cached batch needs no key either
    assert server.count == 1


def test_default_cache_dir_honours_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMETRIC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_cache_dir() == tmp_path / "xdg" / "mnemetric"
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "explicit"))
    with ResponseCache() as cache:
        assert cache.path == tmp_path / "explicit" / CACHE_FILENAME


# -- retries ----------------------------------------------------------------------------------------
def test_429_retry_after_seconds_is_waited_then_retried(server):
    server.add_faults(Fault.rate_limit(retry_after="1"))
    client = make_client(server)
    start = time.monotonic()
    result = run(client, ask(0))[0]
    assert time.monotonic() - start >= 0.95
    assert result.text == "echo: question 0"
    assert server.count == 2 and client.stats.retries == 1


def test_429_retry_after_ms_is_honoured(server):
    server.add_faults(Fault.rate_limit(retry_after=None, retry_after_ms="300"))
    start = time.monotonic()
    run(make_client(server), ask(0))
    assert time.monotonic() - start >= 0.28
    assert server.count == 2


def test_parse_retry_after_forms():
    now = time.time()
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 9.0 <= parse_retry_after({"Retry-After": formatdate(now + 10, usegmt=True)}, now=now) <= 10.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_500_then_success(server):
    server.add_faults(Fault.server_error(500), Fault.server_error(503))
    client = make_client(server)
    assert run(client, ask(0))[0].text == "echo: question 0"
    assert server.count == 3 and client.stats.retries == 2


def test_timeout_then_success(server):
    server.add_faults(Fault.slow(1.5))
    client = make_client(server, timeout=0.3)
    assert run(client, ask(0))[0].text == "echo: question 0"
    assert server.count == 2


def test_a_timeout_names_the_settings_that_govern_the_request(server):
    """The client's own timeout and attempts (llm.timeout, llm.max_attempts), or, for a request carrying its own
    transport (``timeout`` / ``max_retries`` in its params: the client's do not apply), its component's."""
    client = make_client(server, timeout=0.3, max_attempts=1)
    server.add_faults(Fault.slow(1.5))
    with pytest.raises(LLMRequestError) as info:
        run(client, ask(0))
    assert "timed out after 0.3s (raise timeout, lower max_concurrency)" in str(info.value)
    assert "(or raise max_attempts)" in str(info.value)
    server.add_faults(Fault.slow(1.5))
    with pytest.raises(LLMRequestError) as info:
        run(client, ask(1, timeout=0.3, max_retries=0))
    text = str(info.value)
    assert "timed out after 0.3s (raise the timeout the request's component sets, lower max_concurrency)" in text
    assert "(or raise that component's max_retries)" in text and "max_attempts" not in text


def test_malformed_json_then_success(server):
    server.add_faults(Fault.malformed())
    client = make_client(server)
    result = run(client, ask(0))[0]
    assert result.text == "echo: question 0" and server.count == 2


def test_malformed_json_every_time_gives_a_clear_error_and_caches_nothing(server, cache_dir):
    server.add_faults(*[Fault.malformed()] * 3)
    client = make_client(server, max_attempts=3)
    with pytest.raises(LLMRequestError, match="malformed") as info:
        run(client, ask(0))
    assert isinstance(info.value, MnemetricError) and info.value.attempts == 3
    assert server.count == 3
    assert len(client.cache) == 0


def test_server_down_gives_a_connection_message(tmp_path):
    client = LLMClient(base_url="http://127.0.0.1:9/v1", api_key=SECRET, max_attempts=2, backoff_base=0.01)
    with pytest.raises(LLMRequestError, match="could not connect"):
        run(client, ask(0))


@pytest.mark.parametrize(
    ("status", "hint"),
    [(401, "check OPENAI_API_KEY"), (404, "check the model name 'gpt-test' and the base URL"),
     (400, "check the request"), (403, "access to model"), (422, "check the request parameters")],
)
def test_client_errors_fail_fast_with_a_helpful_message(server, status, hint):
    server.add_faults(Fault.status_code(status))
    client = make_client(server)
    with pytest.raises(LLMRequestError) as info:
        run(client, ask(0))
    message = str(info.value)
    assert hint in message and f"HTTP {status}" in message
    if status == 404:
        assert server.base_url in message
    assert SECRET not in message
    assert info.value.status == status and info.value.attempts == 1
    assert server.count == 1 and client.stats.retries == 0


def test_batch_stops_on_fatal_error_but_keeps_finished_work(server):
    server.add_faults(Fault.slow(0), Fault.unauthorized())
    client = make_client(server, max_concurrency=1)
    with pytest.raises(LLMRequestError, match="OPENAI_API_KEY"):
        run(client, *[ask(i) for i in range(5)])
    assert server.count == 2 and len(client.cache) == 1


# -- budget and dry run -----------------------------------------------------------------------------
def test_budget_max_requests_stops_before_the_extra_call(server):
    client = make_client(server, budget=Budget(max_requests=2))
    run(client, ask(0), ask(1))
    with pytest.raises(BudgetExceeded, match="max_requests=2") as info:
        run(client, ask(2))
    assert isinstance(info.value, MnemetricError)
    assert server.count == 2
    assert run(client, ask(0))[0].cached  # cache hits are free and do not count
    assert server.count == 2


def test_budget_max_usd_stops_before_the_call_that_would_exceed(server):
    server.reply = lambda messages: "ok"  # 1 completion token
    prices = PriceTable.from_dict({"gpt-test": {"input": 1000.0, "output": 1000.0}})  # $0.001 / token
    client = make_client(server, prices=prices, budget=Budget(max_usd=0.05))
    content = "x" * 40  # 41 chars: estimate 11 prompt tokens + 10 max_tokens = $0.021
    reqs = [ChatRequest("gpt-test", [{"role": "user", "content": f"{content}{i}"}], {"max_tokens": 10})
            for i in range(4)]
    # one at a time: concurrent requests each reserve their estimate until they are settled
    results = [run(client, r)[0] for r in reqs[:3]]  # actual per reply: 11 prompt + 1 completion = $0.012
    assert [r.cost_usd for r in results] == pytest.approx([0.012] * 3)
    assert client.budget.usd == pytest.approx(0.036)
    with pytest.raises(BudgetExceeded, match=r"\$0\.0570 > max_usd=\$0\.0500") as info:  # 0.036 + 0.021
        run(client, reqs[3])
    assert "estimated $0.0210" in str(info.value)
    assert server.count == 3
    assert client.stats.usd == pytest.approx(0.036)


def test_batch_over_budget_finishes_in_flight_and_caches_them(server):
    server.latency = 0.05
    client = make_client(server, budget=Budget(max_requests=3), max_concurrency=2)
    with pytest.raises(BudgetExceeded):
        run(client, *[ask(i) for i in range(6)])
    assert server.count == 3 and len(client.cache) == 3


def test_dry_run_plan_counts_cached_and_to_send(server):
    prices = PriceTable.from_dict({"gpt-test": {"input": 2.0, "output": 8.0}})
    client = make_client(server, prices=prices)
    reqs = [ask(i, max_tokens=100) for i in range(5)]
    run(client, *reqs[:3])
    before = server.count
    summary = plan_batch(client, reqs)
    assert server.count == before
    per_request = (3 * 2.0 + 100 * 8.0) / 1e6  # "question N" = 10 chars -> 3 prompt tokens
    assert summary == {"requests_total": 5, "cached": 3, "to_send": 2,
                       "estimated_usd": pytest.approx(2 * per_request)}
    direct = plan([{"model": r.model, "messages": r.messages, **r.params} for r in reqs], client.cache,
                  base_url=server.base_url + "/", prices=prices)
    assert direct["cached"] == 3 and direct["to_send"] == 2


# -- concurrency, usage, secrets --------------------------------------------------------------------
def test_concurrency_is_bounded_and_results_keep_input_order(server):
    server.latency = 0.15
    client = make_client(server, max_concurrency=3)
    results = run(client, *[ask(i) for i in range(9)])
    assert server.max_in_flight == 3
    assert [r.text for r in results] == [f"echo: question {i}" for i in range(9)]


def test_usage_and_resolved_model_are_recorded(tmp_path):
    stats = UsageStats()
    prices = PriceTable.from_dict({"gpt-4o": {"input": 2.5, "output": 10.0}})
    with FakeOpenAIServer(model_map={"gpt-4o": "gpt-4o-2024-08-06"}) as srv:
        client = make_client(srv, stats=stats, prices=prices)
        result = run(client, ask(0, model="gpt-4o"))[0]
        assert result.model == "gpt-4o-2024-08-06"
        assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 4)
        assert result.cost_usd == pytest.approx((3 * 2.5 + 4 * 10.0) / 1e6)
        cached = run(client, ask(0, model="gpt-4o"))[0]
    assert cached.cached and cached.model == "gpt-4o-2024-08-06"
    assert cached.cost_usd == result.cost_usd  # the cost of the work, wherever the answer came from
    data = stats.to_dict()
    assert data["requests_sent"] == 1 and data["cache_hits"] == 1
    assert data["prompt_tokens"] == 3 and data["completion_tokens"] == 4
    assert data["per_model"]["gpt-4o"]["requests_sent"] == 1
    assert data["usd"] == pytest.approx(result.cost_usd)  # paid once
    work = stats.work.to_dict()
    assert work["per_model"]["gpt-4o"] == {"responses": 2, "prompt_tokens": 6, "completion_tokens": 8,
                                           "usd": pytest.approx(2 * (3 * 2.5 + 4 * 10.0) / 1e6),
                                           "resolved_models": ["gpt-4o-2024-08-06"]}
    json.dumps(data)
    json.dumps(work)


def assert_secret_nowhere(root: Path) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, "expected the cache to have written files"
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
        assert b"SECRET123" not in path.read_bytes(), path


def test_api_key_is_never_written_to_disk(server, tmp_path):
    client = make_client(server)
    run(client, ask(0), ask(1, temperature=0.5))
    embed_batch(client, "emb-test", ["alpha"])
    server.add_faults(Fault.unauthorized())
    with pytest.raises(LLMRequestError):
        run(client, ask(2))
    assert server.count == 4
    assert_secret_nowhere(tmp_path)  # while the connection (and WAL) is still open
    client.close()
    assert_secret_nowhere(tmp_path)
    assert SECRET not in repr(client)


URL_SECRET = "pw-SECRET-userinfo"


def test_credentials_in_the_base_url_are_never_stored_or_shown(server, tmp_path):
    noisy = server.base_url.replace("http://", f"http://proxyuser:{URL_SECRET}@")
    client = make_client(server, base_url=noisy)
    assert client.base_url == server.base_url
    result = run(client, ask(0))[0]
    embed_batch(client, "emb-test", ["alpha"])
    server.add_faults(Fault.status_code(404))
    with pytest.raises(LLMRequestError) as info:
        run(client, ask(1))
    assert server.base_url in str(info.value)
    assert not [s for s in (str(info.value), repr(client), client.base_url) if URL_SECRET in s or "proxyuser" in s]
    # the key is the one of the same URL without credentials: a clean client reuses the answer
    again = run(make_client(server), ask(0))[0]
    assert again.cached and again.request_sha256 == result.request_sha256
    client.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == CACHE_FILENAME for p in files)
    for path in files:
        assert URL_SECRET.encode() not in path.read_bytes() and b"proxyuser" not in path.read_bytes(), path


def test_query_string_credentials_are_scrubbed_from_messages():
    client = LLMClient(base_url="https://u:pw-SECRET-1@proxy.example/v1?api-key=qs-SECRET-2", api_key=SECRET,
                       use_cache=False)
    assert client.base_url == "https://proxy.example/v1"
    text = client._scrub("failed at https://u:pw-SECRET-1@proxy.example/v1?api-key=qs-SECRET-2 with key " + SECRET)
    assert "SECRET" not in text and "proxy.example" in text


def test_base_urls_without_credentials_are_left_as_they_are():
    for url in ("http://h/v1", "https://api.openai.com/v1", "localhost:8000/v1", "http://[::1]:8000/v1",
                "http://Host.Example:8080/openai/deployments/x"):
        assert normalize_base_url(url + "/") == url
    assert normalize_base_url("https://u:k@proxy.example:8443/v1/?api-key=k#frag") == "https://proxy.example:8443/v1"
    clean = key_payload("chat", "https://h/v1", "m", [], {})
    assert key_payload("chat", "https://u:k@h/v1?key=s", "m", [], {}) == clean


# -- processes --------------------------------------------------------------------------------------
CHILD = r"""
import json, sys
from mnemetric.execute import ImmediateExecutor, ModelCall
from mnemetric.llm import LLMClient
base_url, n = sys.argv[1], int(sys.argv[2])
client = LLMClient(base_url=base_url, api_key="sk-test-SECRET123", max_concurrency=2, timeout=10)
calls = [ModelCall.chat(role="judge", model="gpt-test", messages=[{"role": "user", "content": f"question {i}"}],
                        base_url=client.base_url) for i in range(n)]
results = ImmediateExecutor.around(client).run(calls)
print(json.dumps([r.cached for r in results]), flush=True)
"""


def child_env(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["MNEMETRIC_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC_DIR), env.get("PYTHONPATH", "")])
    return env


def committed(cache_dir: Path) -> dict[str, int]:
    """Server-side body key -> question number, for every response in the cache file."""
    with contextlib.closing(sqlite3.connect(cache_dir / CACHE_FILENAME)) as conn:
        rows = conn.execute("SELECT request_json FROM responses WHERE kind='chat'").fetchall()
    out = {}
    for (text,) in rows:
        req = json.loads(text)
        body = {"model": req["model"], "messages": req["messages"], **req["params"]}
        out[canonical_sha256(body)] = int(req["messages"][-1]["content"].split()[-1])
    return out


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killed_batch_loses_nothing_committed_and_resends_nothing_committed(tmp_path, cache_dir, sig):
    """A 20-request batch (200 ms per reply, 2 at a time) is killed mid-run, then rerun.

    Every response committed before the kill must come from the cache on the rerun, so the server
    sees each request exactly once -- except the <= 2 that were in flight when the process died.
    """
    with FakeOpenAIServer(latency=0.2) as srv:
        cmd = [sys.executable, "-c", CHILD, srv.base_url, "20"]
        env = child_env(cache_dir)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for(lambda: srv.answered >= 5)
        proc.send_signal(sig)
        proc.communicate(timeout=20)
        assert proc.returncode != 0
        wait_for(lambda: srv.in_flight == 0)
        first_run = srv.keys()
        saved = committed(cache_dir)
        assert 4 <= len(saved) < 20
        assert set(saved) <= set(first_run)
        lost = len(first_run) - len(saved)
        assert 0 <= lost <= 2  # only requests that were on the wire at the kill

        rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert rerun.returncode == 0, rerun.stderr
        flags = json.loads(rerun.stdout.strip().splitlines()[-1])
        all_keys = srv.keys()

    assert {i for i, hit in enumerate(flags) if hit} == set(saved.values())
    assert len(all_keys) == 20 + lost
    counts = Counter(all_keys)
    assert all(counts[k] == 1 for k in saved), "a committed response was paid for twice"
    assert len(counts) == 20 and len(committed(cache_dir)) == 20
    assert_secret_nowhere(tmp_path)


def test_server_runs_as_a_script(tmp_path):
    log = tmp_path / "requests.jsonl"
    cmd = [sys.executable, str(SERVER_SCRIPT), "--port", "0", "--latency-ms", "10", "--log", str(log)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        try:
            base_url = proc.stdout.readline().split()[-1]
            client = LLMClient(base_url=base_url, api_key=SECRET, use_cache=False)
            results = run_batch(client, [ask(i) for i in range(3)])
            assert [r.text for r in results] == [f"echo: question {i}" for i in range(3)]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    assert proc.returncode == 0
    assert len(log.read_text().splitlines()) == 3
