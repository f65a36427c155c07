"""Cross-process single flight through the SQLite cache: real processes, one real local server.

Measured before this change: two processes judging the same 43 requests at once sent 86.
"""

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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.batch import embed_batch, plan_batch, run_batch  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer, fake_embedding  # noqa: E402

from mnemetric.llm import CACHE_FILENAME, ChatRequest, LLMClient, ResponseCache, key_payload, request_key  # noqa: E402
from mnemetric.llm.claims import HOST, pid_alive  # noqa: E402

SECRET = "sk-test-CLAIMS"
N = 43

CHILD = r"""
import json, os, sys, time
from pathlib import Path
from mnemetric.execute import ImmediateExecutor, ModelCall
from mnemetric.llm import LLMClient
base_url, n, order, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
while not go.exists():  # start together
    time.sleep(0.005)
client = LLMClient(base_url=base_url, api_key="sk-test-CLAIMS", max_concurrency=4, timeout=60, role="judge")
idx = list(range(n)) if order == "forward" else list(range(n))[::-1]
calls = [ModelCall.chat(role="judge", model="gpt-test", messages=[{"role": "user", "content": f"question {i}"}],
                        params={"temperature": 0}, base_url=client.base_url) for i in idx]
if os.environ.get("EMBED"):
    client.embed_batch_size = 4
    embeds = [ModelCall.embedding(role="embeddings", model="emb-test", text=f"text {i}", base_url=client.base_url)
              for i in idx]
    texts = [json.dumps(list(o.embedding)) for o in ImmediateExecutor.around(client).run(embeds)]
else:
    texts = [r.text for r in ImmediateExecutor.around(client).run(calls)]
s = client.stats
print(json.dumps({"order": idx, "texts": texts, "sent": s.requests_sent, "hits": s.cache_hits,
                  "waited": s.waited, "taken_over": s.taken_over}), flush=True)
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(path))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return path


def child_env(cache_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MNEMETRIC_"))}
    env |= {"MNEMETRIC_CACHE_DIR": str(cache_dir), "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            **extra}
    return env


def start_child(base_url: str, order: str, go: Path, env: dict[str, str], n: int = N) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, base_url, str(n), order, str(go)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def claims_rows(cache_dir: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(cache_dir / CACHE_FILENAME)) as conn:
        return conn.execute("SELECT key, pid, host FROM claims").fetchall()


@pytest.mark.parametrize("orders", [("forward", "forward"), ("forward", "reverse")])
def test_two_processes_send_each_of_43_requests_once(tmp_path, cache_dir, orders):
    go = tmp_path / "go"
    with FakeOpenAIServer(latency=0.05) as srv:
        procs = [start_child(srv.base_url, order, go, child_env(cache_dir)) for order in orders]
        time.sleep(0.5)  # both have imported and are polling for the start signal
        go.touch()
        results = [finish(p) for p in procs]
        sent = srv.keys()
    assert len(sent) == N and set(Counter(sent).values()) == {1}  # 43, not 86
    assert sum(r["sent"] for r in results) == N
    for r in results:
        assert r["texts"] == [f"echo: question {i}" for i in r["order"]]
        assert r["sent"] + r["hits"] == N
    assert claims_rows(cache_dir) == []


def test_two_processes_embed_each_text_once(tmp_path, cache_dir):
    go = tmp_path / "go"
    with FakeOpenAIServer(latency=0.05) as srv:
        procs = [start_child(srv.base_url, order, go, child_env(cache_dir, EMBED="1"), n=40)
                 for order in ("forward", "reverse")]
        time.sleep(0.5)
        go.touch()
        results = [finish(p) for p in procs]
        inputs = [t for r in srv.requests for t in r.body["input"]]
    assert sorted(inputs) == sorted(f"text {i}" for i in range(40))  # every text sent exactly once
    for r in results:
        assert [json.loads(v) for v in r["texts"]] == [fake_embedding(f"text {i}") for i in r["order"]]
    assert claims_rows(cache_dir) == []


def test_a_sigkilled_claimants_claims_are_taken_over(tmp_path, cache_dir):
    go = tmp_path / "go"
    go.touch()
    with FakeOpenAIServer(latency=30.0) as srv:  # the first process never gets its answers
        killed = start_child(srv.base_url, "forward", go, child_env(cache_dir), n=6)
        deadline = time.monotonic() + 30
        while srv.in_flight < 4:
            assert time.monotonic() < deadline and killed.poll() is None, "the claimant did not start sending"
            time.sleep(0.01)
        held = claims_rows(cache_dir)
        assert len(held) == 4 and {(pid, host) for _, pid, host in held} == {(killed.pid, HOST)}
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        assert not pid_alive(killed.pid)
        srv.latency = 0.0
        first = srv.count
        # the claim timeout is ~35 minutes: finishing now means the dead pid was noticed, not the age
        rerun = finish(start_child(srv.base_url, "forward", go, child_env(cache_dir), n=6))
        sent_again = srv.keys()[first:]
    assert rerun["texts"] == [f"echo: question {i}" for i in range(6)]
    assert rerun["taken_over"] == 4 and rerun["sent"] == 6 and len(sent_again) == 6
    assert claims_rows(cache_dir) == []


def put_claim(cache_dir: Path, key: str, *, host: str, started_at: float, pid: int = 1) -> None:
    with ResponseCache(cache_dir / CACHE_FILENAME) as cache, contextlib.closing(
            sqlite3.connect(cache_dir / CACHE_FILENAME)) as conn:
        assert len(cache) == 0
        with conn:
            conn.execute("INSERT INTO claims (key, pid, host, started_at, token) VALUES (?,?,?,?,?)",
                         (key, pid, host, started_at, "their-token"))


def ask0() -> tuple[ChatRequest, dict, str]:
    req = ChatRequest("gpt-test", [{"role": "user", "content": "question 0"}], {"temperature": 0})
    payload = key_payload("chat", None, req.model, req.messages, req.params)
    return req, payload, request_key(payload)


def test_a_live_claim_is_waited_for_and_its_response_used(cache_dir):
    with FakeOpenAIServer() as srv:
        req, _, _ = ask0()
        payload = key_payload("chat", srv.base_url, req.model, req.messages, req.params)
        key = request_key(payload)
        put_claim(cache_dir, key, host="another-host", started_at=time.time())
        answer = srv.chat_payload({"model": "gpt-test", "messages": req.messages})

        def other_process_answers() -> None:
            time.sleep(1.0)  # long enough for the client below to look first, even on a loaded machine
            with ResponseCache(cache_dir / CACHE_FILENAME) as cache:
                cache.put(key, payload, answer, stage="judge", release="their-token")

        client = LLMClient(base_url=srv.base_url, api_key=SECRET)  # built before the clock starts
        helper = threading.Thread(target=other_process_answers)
        helper.start()
        result = run_batch(client, [req])[0]
        helper.join()
        assert srv.count == 0  # waited, did not send
    assert result.cached and result.text == "echo: question 0"
    assert client.stats.waited == 1 and client.stats.requests_sent == 0
    assert claims_rows(cache_dir) == []


def test_a_claim_older_than_the_timeout_is_taken_over(cache_dir):
    with FakeOpenAIServer() as srv:
        req, _, _ = ask0()
        key = request_key(key_payload("chat", srv.base_url, req.model, req.messages, req.params))
        put_claim(cache_dir, key, host="another-host", started_at=time.time() - 10_000)
        client = LLMClient(base_url=srv.base_url, api_key=SECRET, claim_timeout=600)
        result = run_batch(client, [req])[0]
        assert srv.count == 1
    assert result.ok and not result.cached and client.stats.taken_over == 1
    assert claims_rows(cache_dir) == []


def test_a_failed_request_drops_its_claim(cache_dir):
    from tests.support.openai_server import Fault

    from mnemetric.llm import LLMRequestError

    with FakeOpenAIServer() as srv:
        srv.add_faults(Fault.unauthorized())
        client = LLMClient(base_url=srv.base_url, api_key=SECRET)
        with pytest.raises(LLMRequestError):
            run_batch(client, [ask0()[0]])
    assert claims_rows(cache_dir) == []


def test_pid_alive_tells_running_dead_and_zombie_processes_apart():
    assert pid_alive(os.getpid())
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert not pid_alive(done.pid)  # exited and reaped
    if sys.platform.startswith("linux"):
        zombie = subprocess.Popen([sys.executable, "-c", "pass"])
        deadline = time.monotonic() + 10
        while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not pid_alive(zombie.pid)  # exited, not yet reaped by us
        zombie.wait()


def test_an_embedding_whose_claimant_gives_up_is_sent_by_the_waiter(cache_dir):
    """Another process holds the claim on "beta", then fails and drops it: we send "beta" ourselves."""
    with FakeOpenAIServer() as srv:
        key = request_key(key_payload("embeddings", srv.base_url, "emb-test", "beta", {}))
        put_claim(cache_dir, key, host="another-host", started_at=time.time())

        def other_process_fails() -> None:
            time.sleep(0.3)
            with ResponseCache(cache_dir / CACHE_FILENAME) as cache:
                cache.release([key], "their-token")

        helper = threading.Thread(target=other_process_fails)
        helper.start()
        client = LLMClient(base_url=srv.base_url, api_key=SECRET)
        vectors = embed_batch(client, "emb-test", ["alpha", "beta", "gamma"])
        helper.join()
        inputs = [r.body["input"] for r in srv.requests]
    assert vectors == [fake_embedding(t) for t in ("alpha", "beta", "gamma")]
    assert inputs == [["alpha", "gamma"], ["beta"]]  # ours first; "beta" only once its claim was dropped
    assert claims_rows(cache_dir) == []
