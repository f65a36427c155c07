"""The dense memory's OpenAI-compatible embeddings: the cost of the work is the same on a cold
run, a warm run (vectors from embeddings.sqlite3) and a run whose only warm cache is the LLM one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.openai_server import FakeOpenAIServer, approx_tokens  # noqa: E402

from mnemetric.longmemeval.adapted import MemorySession, Message, Query  # noqa: E402
from mnemetric.execute import ImmediateExecutor  # noqa: E402
from mnemetric.llm import UsageStats  # noqa: E402
from mnemetric.longmemeval.memory.dense import Dense  # noqa: E402

SESSIONS = tuple(MemorySession(f"s{i:03d}", None, "", (Message("user", text), Message("assistant", "Noted.")))
                 for i, text in enumerate(["I baked sourdough bread on Sunday.", "My car had a flat tire.",
                                           "Max the dog got his rabies shot.", "We plan a hike in October."]))
QUESTIONS = [Query("q1", "When did the dog get a shot?", None, ""), Query("q2", "What did I bake?", None, "")]


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-EMB")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def one_run(server: FakeOpenAIServer, questions=QUESTIONS) -> tuple[dict, UsageStats]:
    """Questions over the same haystack (the second reuses every document vector)."""
    dense = Dense(backend="openai", model="emb-test", base_url=server.base_url)
    with ImmediateExecutor({}, progress=False) as executor:  # the run's one executor and ledger
        dense.use_executor(executor)
        dense.embedder.batch_size = 3
        for query in questions:
            dense.reset()
            for s in SESSIONS:
                dense.ingest(s)
            dense.retrieve(query, "turn")
    stats: UsageStats = executor.usage
    return stats.work.to_dict(), stats


def test_embedding_work_is_the_same_cold_warm_and_llm_cache_only(tmp_path):
    with FakeOpenAIServer() as srv:
        first, first_stats = one_run(srv, QUESTIONS[:1])
        # a cold call: its tokens are exactly what the server reported, split over the texts
        assert first["prompt_tokens"] == sum(approx_tokens(t) for r in srv.requests for t in r.body["input"])
        assert first_stats.requests_sent == srv.count == 2  # 5 distinct texts, 3 per request
        cold, _ = one_run(srv)  # sends only the second query
        sent = srv.count
        warm, warm_stats = one_run(srv)
        (tmp_path / "cache" / "embeddings.sqlite3").unlink()
        llm_only, _ = one_run(srv)
        assert srv.count == sent == 3  # nothing re-sent by either warm run
    # each question: the 4 user turns + its query = 5 distinct texts per call
    assert cold["responses"] == 10 and first["responses"] == 5
    assert warm == cold and llm_only == cold
    assert warm_stats.requests_sent == 0
