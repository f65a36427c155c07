"""The loopback model proxy, library-level over real HTTP: the openai SDK (as a memory library uses it) →
ModelProxy → the loopback fake OpenAI server (tests/support/openai_server.py)."""

from __future__ import annotations

import socket

import openai
import pytest

from mnemetric.errors import ConfigError, PluginError
from mnemetric.execute import ImmediateExecutor
from mnemetric.llm import proxy as model_proxy
from mnemetric.llm.budget import BudgetExceeded
from mnemetric.llm.proxy import DUMMY_KEY, ModelProxy, NoModelProxy
from tests.support.loopback import serve_isolated
from tests.support.openai_server import Fault

LLM = {"max_concurrency": 2, "timeout": 10, "max_attempts": 2, "non_answer_attempts": 1,
       "prices": {"m-chat": {"input": 1.0, "output": 2.0}, "m-embed": {"input": 0.5, "output": 0.0}}}


@pytest.fixture()
def server(tmp_path, monkeypatch):
    yield from serve_isolated(tmp_path, monkeypatch, "sk-test-REAL")


def _executor(**llm):
    return ImmediateExecutor({**LLM, **llm}, progress=False)


def _library(proxy: ModelProxy) -> openai.OpenAI:
    """What a memory library builds: the SDK pointed at the proxy, with the dummy key."""
    return openai.OpenAI(base_url=proxy.base_url, api_key=proxy.api_key, max_retries=0)


def _chat(client, text="hello"):
    return client.chat.completions.create(model="m-chat", messages=[{"role": "user", "content": text}],
                                          temperature=0)


def test_chat_and_embeddings_go_through_the_cache_and_reach_the_real_endpoint(server):
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        assert proxy.base_url.endswith("/v1") and proxy.api_key == DUMMY_KEY
        assert model_proxy.active() is proxy
        lib = _library(proxy)
        with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
            reply = _chat(lib)
            vectors = lib.embeddings.create(model="m-embed", input=["alpha", "beta"])  # SDK default: base64
        with proxy.attribute(system="toy", phase="query", question_id="q1"):
            again = _chat(lib)
            repeat = lib.embeddings.create(model="m-embed", input="alpha")
            floats = lib.embeddings.create(model="m-embed", input="alpha", encoding_format="float")
    assert reply.choices[0].message.content == "echo: hello" == again.choices[0].message.content
    assert [len(d.embedding) for d in vectors.data] == [8, 8]
    assert repeat.data[0].embedding == vectors.data[0].embedding
    assert floats.data[0].embedding == pytest.approx(vectors.data[0].embedding, abs=1e-6)
    # one chat, and one embeddings request per format (base64 and float are two requests); the repeats were hits
    assert [(r.path, r.body.get("input"), r.body.get("encoding_format")) for r in server.requests] == [
        ("/v1/chat/completions", None, None), ("/v1/embeddings", ["alpha", "beta"], "base64"),
        ("/v1/embeddings", ["alpha"], "float")]
    assert all(r.body.get("model") in ("m-chat", "m-embed") for r in server.requests)
    work = proxy.ledger.work()
    assert work["systems"]["toy"]["ingest"]["requests"] == {"chat": 1, "embeddings": 1}
    assert work["systems"]["toy"]["query"]["usage"]["responses"] == 3  # the work of a hit counts like a send
    assert work["systems"]["toy"]["query"]["usage"]["per_model"]["m-chat"]["prompt_tokens"] == 2
    run = proxy.ledger.this_run()
    assert run["systems"]["toy"]["ingest"]["sent"] == 2 and run["systems"]["toy"]["query"]["sent"] == 1
    with pytest.raises(NoModelProxy, match="no model proxy is running"):
        model_proxy.active()


def test_the_real_key_never_reaches_the_library_and_the_dummy_key_never_reaches_the_server(server):
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        _chat(_library(proxy))
    assert server.count == 1  # the fake server accepts any key; the SDK sent the real one, from the env
    assert DUMMY_KEY not in repr(proxy.__dict__.get("executor"))


def test_a_rerun_sends_nothing(server):
    def run():
        with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
            with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
                _chat(_library(proxy), "remember this")
                _library(proxy).embeddings.create(model="m-embed", input=["one", "two"])
            return proxy.ledger
    first = run()
    sent = server.count
    second = run()
    assert sent == 2 and server.count == sent
    assert second.this_run()["total"]["hit_rate"] == 1.0 and second.sent == 0
    assert first.work() == second.work()  # the tracked view is the same cold and warm


def test_budget_stops_the_run_even_if_the_library_swallows_the_error(server):
    with _executor(budget={"max_requests": 1}) as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        lib = _library(proxy)
        with pytest.raises(BudgetExceeded, match="max_requests=1"):
            with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
                _chat(lib, "first")
                try:
                    _chat(lib, "second")
                except openai.RateLimitError as exc:  # what the library saw: a 429 that says why
                    assert "budget exceeded" in str(exc)
    assert server.count == 1


def test_a_non_answer_is_never_passed_on_and_names_system_question_and_call(server):
    server.add_faults(Fault.non_answer("null_content"))
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        with pytest.raises(PluginError) as err:
            with proxy.attribute(system="toy", phase="query", question_id="q7"):
                _chat(_library(proxy))
    text = str(err.value)
    assert "memory system toy" in text and "query of question q7" in text
    assert "POST /v1/chat/completions (model m-chat)" in text and "content is null" in text


def test_stream_true_is_a_clear_400(server):
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        lib = _library(proxy)
        with pytest.raises(PluginError, match="streaming is off"):
            with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
                with pytest.raises(openai.BadRequestError, match="stream=true"):
                    lib.chat.completions.create(model="m-chat", messages=[{"role": "user", "content": "x"}],
                                                stream=True)
    assert server.count == 0


def test_an_unserved_path_is_a_clear_404_naming_it(server):
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        lib = _library(proxy)
        with pytest.raises(PluginError, match=r"GET /v1/models"):
            with proxy.attribute(system="toy", phase="ingest", question_id="q1"):
                with pytest.raises(openai.NotFoundError) as err:
                    lib.models.list()
                assert "it serves POST /v1/chat/completions and POST /v1/embeddings" in str(err.value)
        with pytest.raises(openai.NotFoundError, match="/v1/completions"):
            lib.completions.create(model="m-chat", prompt="x")
        with pytest.raises(PluginError, match="/v1/completions"):
            proxy.raise_failures()


def test_a_port_in_use_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is already in use"):
            ModelProxy(None, port=port).start()
    assert model_proxy.current() is None


def test_a_configured_free_port_is_used(server):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with _executor() as ex, ModelProxy(ex, base_url=server.base_url, port=port) as proxy:
        assert proxy.base_url == f"http://127.0.0.1:{port}/v1"
        _chat(_library(proxy))


def test_stopping_waits_for_the_request_in_flight_so_its_paid_answer_is_cached(server):
    import threading
    import time

    server.add_faults(Fault.slow(0.5))
    with _executor() as ex:
        proxy = ModelProxy(ex, base_url=server.base_url).start()
        worker = threading.Thread(target=lambda: _chat(_library(proxy), "slow"), daemon=True)
        worker.start()
        deadline = time.monotonic() + 10
        while server.in_flight == 0 and time.monotonic() < deadline:  # the request reached the real endpoint
            time.sleep(0.01)
        proxy.stop()  # as an interrupted run does
        assert len(ex.cache) == 1  # answered and committed before the proxy went away
        worker.join(5)


def test_a_route_per_real_endpoint_and_the_callers_tallies_count_the_requests(server):
    """Code whose clients talk to two endpoints gets one proxy URL per endpoint (``route``): each request reaches its
    own endpoint through the executor, and the tallies open where the attribution block was opened count them."""
    from tests.support.openai_server import FakeOpenAIServer
    from mnemetric.llm.tally import tallying

    with FakeOpenAIServer() as other, _executor() as ex, ModelProxy(ex, base_url=server.base_url) as proxy:
        embeddings_url = proxy.route(other.base_url)
        assert proxy.route(other.base_url) == embeddings_url != proxy.base_url == proxy.route(server.base_url)
        assert embeddings_url.endswith("/r1/v1")
        chat = _library(proxy)
        embed = openai.OpenAI(base_url=embeddings_url, api_key=proxy.api_key, max_retries=0)
        with tallying() as tally, proxy.attribute(system="toy", phase="ingest", question_id="q1"):
            _chat(chat)
            embed.embeddings.create(model="m-embed", input=["alpha", "beta"])
        unknown = openai.OpenAI(base_url=embeddings_url.replace("/r1/", "/r9/"), api_key="x", max_retries=0)
        with pytest.raises(PluginError, match="no endpoint POST /r9/v1/embeddings"):  # an unknown route: named
            with proxy.attribute(system="toy", phase="query", question_id="q1"):
                with pytest.raises(openai.NotFoundError):
                    unknown.embeddings.create(model="m-embed", input="alpha")
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    assert [r.path for r in other.requests] == ["/v1/embeddings"] and other.requests[0].body["input"] == ["alpha", "beta"]
    assert tally.requests_sent == 2 and tally.work_responses == 3
