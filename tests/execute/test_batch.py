"""BatchExecutor against the loopback server's Files and Batches API (the real openai SDK over HTTP; states
advanced one step per poll, no sleeps beyond a 0.01 s poll interval): cost at the batch price, reruns send
nothing, batch and live share the cache, and every bad input is a clear error with nothing half-written."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from mnemetric.errors import InputError
from mnemetric.execute import ImmediateExecutor, measuring_latency
from mnemetric.execute.batch import BatchExecutor
from mnemetric.execute.batch_remote import BatchError, BatchPending
from mnemetric.llm.batch_files import BATCH_MARK, split_lines
from mnemetric.llm.batch_ledger import Ledger
from mnemetric.llm.cache import ResponseCache
from mnemetric.llm.types import LLMRequestError
from mnemetric.llm.usage import UsageRecord
from tests.support.batch_run import PRICES, calls
from tests.support.openai_server import FakeOpenAIServer

LLM = {"prices": PRICES}


@pytest.fixture()
def server(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-BATCH")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer() as s:
        s.batch.auto = True
        yield s


def batch(**kw) -> BatchExecutor:
    return BatchExecutor(kw.pop("llm", LLM), poll_interval=0.01, progress=False, **kw)


def test_batch_costs_half_of_live_on_the_same_requests_and_a_rerun_sends_nothing(server, tmp_path):
    with ImmediateExecutor(LLM, progress=False, cache=ResponseCache(tmp_path / "live.sqlite3")) as live:
        live_out = live.run(calls(server.base_url, 5))
    with batch() as ex:
        out = ex.run(calls(server.base_url, 5))
        assert ex.usage.requests_sent == 5 and server.count == 5  # the 5 live ones only
        work = ex.usage.work.to_dict()
    assert [o.text for o in out] == [o.text for o in live_out]
    assert [o.cost_usd for o in out] == [o.cost_usd for o in live_out]  # the work at the live price, per call
    [made] = server.batch.batches.values()  # what OpenAI's Batch API is given
    assert (made["endpoint"], made["completion_window"]) == ("/v1/chat/completions", "24h")
    assert server.batch.files[made["input_file_id"]]["purpose"] == "batch"
    sent = [json.loads(x) for x in server.batch.files[made["input_file_id"]]["data"].splitlines()]
    assert [(x["custom_id"], x["method"], x["url"]) for x in sent] == \
        [(c.key, "POST", "/v1/chat/completions") for c in calls(server.base_url, 5)]
    assert {x["body"]["model"] for x in sent} == {"m"}  # one model per batch
    assert work["usd"] / live.usage.work.to_dict()["usd"] == pytest.approx(0.5)
    assert ex.usage.usd / live.usage.usd == pytest.approx(0.5)
    assert work["batch_responses"] == 5 and work["per_model"]["m"]["batch_responses"] == 5
    UsageRecord.from_record(work, file="usage.json")  # the sidecar layout validates
    # rerun: batch sends nothing; immediate over the same cache sends nothing either and prices it as batch
    with batch() as ex:
        ex.run(calls(server.base_url, 5))
        assert ex.usage.requests_sent == 0 and ex.usage.cache_hits == 5
    with ImmediateExecutor(LLM, progress=False) as again:
        again.run(calls(server.base_url, 5))
        assert again.usage.requests_sent == 0 and again.usage.work.to_dict()["usd"] == pytest.approx(work["usd"])
    assert len(server.batch.submitted) == 5 and server.count == 5


def test_calls_of_two_models_go_in_one_batch_per_model_and_every_answer_lands(server):
    two = calls(server.base_url, 7, models=("m", "n"))  # m, n, m, n, ... interleaved
    with batch() as ex:
        out = ex.run(two)
        work = ex.usage.work.to_dict()
    assert [(o.text, o.model) for o in out] == [(f"echo: q{i}", "mn"[i % 2]) for i in range(7)]
    made = list(server.batch.batches.values())
    assert len(made) == 2
    by_model = {}
    for b in made:
        sent = [json.loads(x) for x in server.batch.files[b["input_file_id"]]["data"].splitlines()]
        [model] = {x["body"]["model"] for x in sent}  # one model per batch
        by_model[model] = [x["custom_id"] for x in sent]
    assert by_model == {"m": [c.key for c in two[0::2]], "n": [c.key for c in two[1::2]]}
    assert {m: v["batch_responses"] for m, v in work["per_model"].items()} == {"m": 4, "n": 3}
    with batch() as ex:  # every answer is in the cache under its own model's key
        assert [o.text for o in ex.run(two)] == [o.text for o in out] and ex.usage.cache_hits == 7
    assert len(server.batch.submitted) == 7


def test_cached_calls_cost_no_request_and_timed_calls_go_live(server):
    with ImmediateExecutor(LLM, progress=False) as live:
        live.run(calls(server.base_url, 2))
    with batch() as ex:
        out = ex.run(calls(server.base_url, 4) + calls(server.base_url, 1, timed=True))
        with measuring_latency():
            ex.run(calls(server.base_url, 6)[5:])
    assert [o.text for o in out] == [f"echo: q{i}" for i in range(4)] + ["echo: q0"]
    assert Counter(server.batch.submitted) == Counter(c.key for c in calls(server.base_url, 4)[2:])
    assert server.count == 3  # q0, q1 warmed live; q5 measured: live


def test_an_http_400_with_error_null_is_an_error_never_an_answer(server):
    bad = calls(server.base_url, 3)[1].key
    server.batch.error_for = lambda key, body: 400 if key == bad else None
    with batch() as ex, pytest.raises(LLMRequestError, match=f"{bad}.*HTTP 400"):
        ex.run(calls(server.base_url, 3))
    with ResponseCache() as cache:
        assert bad not in cache and len(cache) == 2  # the others are kept
    with batch() as ex:  # a call that tolerates 400 gets a failure outcome
        out = ex.run(calls(server.base_url, 3, tolerate=(400,)))
    assert [o.kind for o in out] == ["answer", "failure", "answer"] and out[1].status == 400


def test_a_non_answer_is_asked_again_then_reported_never_a_verdict(server):
    server.non_answer_for = lambda body: "null_content" if body["messages"][0]["content"] == "q1" else None
    with batch() as ex:
        out = ex.run(calls(server.base_url, 2))
        assert ex.usage.non_answers == 2
    assert [o.kind for o in out] == ["answer", "non_answer"] and out[1].reason == "content is null"
    key = calls(server.base_url, 2)[1].key
    assert server.batch.submitted.count(key) == 2  # llm.non_answer_attempts = 2, as live
    with ResponseCache() as cache:
        assert key not in cache


def test_expired_keeps_what_finished_and_resubmits_the_rest(server):
    server.batch.endings = [("expired", 2)]
    with batch() as ex:
        out = ex.run(calls(server.base_url, 5))
    assert [o.text for o in out] == [f"echo: q{i}" for i in range(5)]
    assert len(server.batch.batches) == 2
    assert Counter(server.batch.executed) == Counter(c.key for c in calls(server.base_url, 5))  # none paid twice


def test_an_expired_batch_whose_output_file_is_cut_at_a_line_boundary_stores_nothing_and_pays_nothing_twice(server):
    """The count check holds for every ending: an expired batch's files must hold what its counts say finished;
    one line short, nothing is stored (storing the rest and resubmitting the missing one would pay it twice)."""
    server.batch.endings = [("expired", 3)]
    server.batch.drop_output_lines = 1
    with batch() as ex, pytest.raises(BatchError, match=r"hold 4 result line\(s\) but the batch reports 5"):
        ex.run(calls(server.base_url, 5))
    with ResponseCache() as cache:
        assert len(cache) == 0
    server.batch.drop_output_lines = 0  # served whole: the same batch is downloaded again, the rest resubmitted
    with batch() as ex:
        assert [o.text for o in ex.run(calls(server.base_url, 5))] == [f"echo: q{i}" for i in range(5)]
    assert Counter(server.batch.executed) == Counter(c.key for c in calls(server.base_url, 5))  # none paid twice


@pytest.mark.parametrize("ending", ["failed", "cancelled"])
def test_failed_and_cancelled_batches_are_reported_with_their_id(server, ending):
    server.batch.endings = [(ending, 2)]
    with batch() as ex, pytest.raises(BatchError, match=rf"batch batch-\d+ .*{ending.upper()}"):
        ex.run(calls(server.base_url, 4))
    with ResponseCache() as cache:
        assert len(cache) == (2 if ending == "cancelled" else 0)  # a cancelled batch's replies are kept
    with batch() as ex:  # the ledger marked it done: a rerun submits the rest
        assert len(ex.run(calls(server.base_url, 4))) == 4


OUTPUT_FILE = r"batch batch-\d+ output file file-\d+"


@pytest.mark.parametrize("fault, value, error, message", [
    ("truncate_output", True, InputError, rf"{OUTPUT_FILE}: line 3: field '<json>': the file is truncated"),
    ("drop_output_lines", 1, BatchError, r"batch batch-\d+: its output and error files hold 2 result line\(s\) but the "
     r"batch reports 3 \(completed \+ failed\): a file is truncated. Nothing was stored"),
    ("extra_line", True, InputError, rf"{OUTPUT_FILE}: line 4 \(f{{64}}\): field 'custom_id': .*unknown custom_id"),
    ("repeat_line", True, InputError, rf"{OUTPUT_FILE}: line 4 \(\w{{64}}\): field 'custom_id': a second result "
     rf"\(first: {OUTPUT_FILE} line 1\)"),
    ("lose_output", True, BatchError, r"batch batch-\d+ \(ledger .*\): its output file file-\d+ is not on the server"),
])
def test_a_bad_output_file_stores_nothing(server, fault, value, error, message):
    setattr(server.batch, fault, value)
    with batch() as ex, pytest.raises(error, match=message):
        ex.run(calls(server.base_url, 3))
    with ResponseCache() as cache:
        assert len(cache) == 0
    with Ledger.beside(ResponseCache().path) as ledger:
        assert [s.state for s in ledger.slots()] == ["submitted"]  # to be downloaded again
    setattr(server.batch, fault, type(value)())  # the file served whole: the same batch is downloaded again
    with batch() as ex:
        assert len(ex.run(calls(server.base_url, 3))) == 3
    assert len(server.batch.submitted) == 3


def test_a_ledger_pointing_at_a_deleted_batch_is_a_clear_error(server):
    with batch(wait=False) as ex, pytest.raises(BatchPending, match="rerun to collect"):
        ex.run(calls(server.base_url, 2))
    bid = server.batch.only()
    server.batch.delete(bid)
    with batch() as ex, pytest.raises(BatchError, match=rf"(?s)batch {bid} .*not on the server.*mnemetric batch forget {bid}"):
        ex.run(calls(server.base_url, 2))
    assert len(server.batch.submitted) == 2  # nothing resubmitted behind the user's back


def test_requests_are_split_at_the_request_and_byte_limits(server):
    with batch(max_requests_per_batch=2) as ex:
        ex.run(calls(server.base_url, 5))
    assert sorted(len(b["request_counts"] and [1] * b["request_counts"]["total"]) for b in
                  server.batch.batches.values()) == [1, 2, 2]
    lines = [(str(i), b"x" * 10) for i in range(5)]
    assert [len(c) for c in split_lines(lines, 50_000, 25)] == [2, 2, 1]
    with pytest.raises(InputError, match="over the batch file limit"):
        split_lines([("k", b"x" * 30)], 50_000, 25)


def test_the_shipped_split_limits_are_the_batch_apis_and_a_request_over_the_byte_limit_is_refused(server):
    from contextlib import closing

    from mnemetric.config import compose
    from mnemetric.errors import ConfigError
    from mnemetric.execute import ModelCall
    from mnemetric.execute.executor import build_executor
    from mnemetric.llm.batch_files import MAX_BYTES, MAX_REQUESTS

    assert (MAX_REQUESTS, MAX_BYTES) == (50_000, 200 * 1024 * 1024) == (50_000, 209_715_200)
    with BatchExecutor() as ex:
        assert (ex.max_requests, ex.max_bytes) == (50_000, 209_715_200)
    for option in ("batch", "batch-export"):  # what `-S executor=batch` / `batch-export` builds
        with closing(build_executor(compose([f"executor={option}"])["executor"], LLM, progress=False)) as ex:
            assert (ex.name, ex.max_requests, ex.max_bytes) == (option, 50_000, 209_715_200)
    with pytest.raises(ConfigError, match=r"executor.max_bytes_per_batch.*209715201 is over the Batch API's limit"):
        BatchExecutor(max_bytes_per_batch=MAX_BYTES + 1)
    with pytest.raises(ConfigError, match=r"executor.max_requests_per_batch.*50001 is over the Batch API's limit"):
        BatchExecutor(max_requests_per_batch=MAX_REQUESTS + 1)
    # one request over the byte limit: a clear error before any batch (of any model) is submitted
    big = ModelCall.chat(role="judge", model="n", messages=[{"role": "user", "content": "x" * 2000}],
                         params={"temperature": 0, "max_tokens": 10}, base_url=server.base_url, tag="q_big")
    with batch(max_bytes_per_batch=1000) as ex, pytest.raises(InputError, match=(
            rf"<batch input file>: request {big.key} \(judge, q_big, model n\): field 'body': one request is "
            r"2\d{3} bytes as a batch line, over the file limit executor.max_bytes_per_batch = 1000 \(the Batch "
            r"API's: 209715200\); nothing was submitted\n  fix: send it live \(executor=immediate\), or raise")):
        ex.run(calls(server.base_url, 3, models=("m", "n")) + [big])
    assert server.batch.batches == {} and server.batch.files == {}
    with Ledger.beside(ResponseCache().path) as ledger:
        assert ledger.slots() == []


def test_rows_are_marked_and_the_budget_counts_batch_requests(server):
    with batch(llm={**LLM, "budget": {"max_requests": 3}}) as ex, pytest.raises(Exception, match="max_requests=3"):
        ex.run(calls(server.base_url, 5))
    with ResponseCache() as cache:
        assert len(cache) == 3
        assert all(BATCH_MARK in cache.get(c.key) for c in calls(server.base_url, 3))


def test_embeddings_go_one_text_per_line_into_the_same_cache_rows(server):
    from mnemetric.execute import ModelCall

    texts = ["alpha", "beta", "alpha"]
    embeds = [ModelCall.embedding(role="embeddings", model="e", text=t, base_url=server.base_url) for t in texts]
    with batch() as ex:
        out = ex.run(embeds)
    with ImmediateExecutor(LLM, progress=False) as live:  # the rows are the live client's: a live rerun hits
        again = live.run(embeds)
        assert live.usage.requests_sent == 0
    assert [o.embedding for o in out] == [o.embedding for o in again] and out[0].embedding == out[2].embedding
    assert len(server.batch.submitted) == 2 and server.count == 0


def test_the_v2_harness_times_queries_inside_measuring_latency():
    from mnemetric.execute import latency_measured
    from mnemetric.longmemeval_v2.harness import MemoryQuestion, query_memory

    seen = []

    class Memory:
        def query(self, text, image):
            seen.append(latency_measured())
            return [{"type": "text", "value": "x"}]

    class Counter_:
        def count(self, text):
            return len(text)

    query_memory(Memory(), MemoryQuestion("q", "t", None, ()), system="s", counter=Counter_(), max_tokens=100)
    assert seen == [True] and not latency_measured()


def test_progress_is_shown_on_stderr_while_polling(server, capsys):
    import threading

    server.batch.auto = False  # the batch moves when the test says
    api = server.batch

    def polled_twice_more() -> None:  # the run has looked at the batch twice since the last step
        seen = api.retrieves.get(api.only(), 0)
        while api.retrieves.get(api.only(), 0) < seen + 2 and run.is_alive():
            run.join(0.01)

    with BatchExecutor(LLM, poll_interval=0.01, progress=True) as ex:
        got: dict = {}
        run = threading.Thread(target=lambda: got.update(out=ex.run(calls(server.base_url, 3), desc="judge")),
                               daemon=True)
        run.start()
        while not api.batches and run.is_alive():
            run.join(0.01)
        polled_twice_more()
        bid = api.only()
        with api.lock:  # in progress, 2 of its 3 requests finished
            api.batches[bid].update(status="in_progress", request_counts={"total": 3, "completed": 2, "failed": 0})
        polled_twice_more()
        api.advance(bid, "completed")
        run.join(30)
    assert not run.is_alive() and [o.text for o in got["out"]] == ["echo: q0", "echo: q1", "echo: q2"]
    frames = capsys.readouterr().err.split("\r")  # the tqdm bar, redrawn at each poll
    polled = [f for f in frames if f.startswith("judge (batch):")]
    assert any(" 0/3 " in f and f"{bid}: validating" in f for f in polled), polled
    assert any(" 2/3 " in f and f"{bid}: in_progress" in f for f in polled), polled
    assert any(" 3/3 " in f and f"{bid}: completed" in f for f in polled), polled


def test_a_second_thread_is_refused_while_a_run_is_under_way_and_nothing_is_paid_twice(server):
    import threading

    from mnemetric.execute.batch import ConcurrentUse

    server.batch.auto = False  # the first run waits on its batch until the test advances it
    with batch() as ex:
        got: dict = {}
        first = threading.Thread(target=lambda: got.update(out=ex.run(calls(server.base_url, 3))), daemon=True)
        first.start()
        while not server.batch.batches and first.is_alive():  # until the first run's batch exists
            first.join(0.01)
        with pytest.raises(ConcurrentUse, match="not thread-safe"):
            ex.run(calls(server.base_url, 3))
        with pytest.raises(ConcurrentUse, match="BatchExecutor.plan"):
            ex.plan(calls(server.base_url, 3))
        server.batch.advance(server.batch.only(), "completed")
        first.join(30)
        assert not first.is_alive() and [o.text for o in got["out"]] == [o.text for o in ex.run(calls(server.base_url, 3))]
    assert sorted(server.batch.submitted) == sorted(set(server.batch.submitted)) and len(server.batch.submitted) == 3
