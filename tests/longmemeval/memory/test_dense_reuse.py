"""Embeddings done once (issue 16, item 2): the content-addressed store serves texts that recur across
questions and experiments, and the rankings are the same bytes as with every haystack embedded afresh."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from mnemetric.embeddings import EmbeddingCache
from mnemetric.longmemeval.adapted import SessionAdapter
from mnemetric.longmemeval.memory.dense import Dense
from mnemetric.longmemeval.retrieve import write_retrieval
from mnemetric.longmemeval.sample import generate_synthetic

from tests.support.openai_server import fake_embedding

V3 = SessionAdapter("session-v3", "mnemetric.longmemeval-session/v3")


@dataclass
class Hashed:
    """A deterministic stand-in for a model: each text's vector depends on the text alone."""

    backend_id: str = "test:hashed"
    embedded: list[str] = field(default_factory=list)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += texts
        return np.asarray([fake_embedding(t, dim=16) for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def records():
    """8 S-like questions: filler sessions recur between haystacks, as in LongMemEval S/M."""
    return [V3.adapt(inst, i) for i, inst in enumerate(generate_synthetic(8, 30, 7))]


def _run(records, tmp_path, name, granularity, cache: EmbeddingCache | None) -> tuple[bytes, Dense]:
    """The retrieval log of ``records``; ``cache=None``: no reuse at all (a new, empty store per question)."""
    dense, backend = Dense(), Hashed()
    dense.embedder = backend
    log = tmp_path / f"{name}.jsonl"
    if cache is not None:
        dense.cache = cache
        write_retrieval(dense, records, granularity=granularity, k=5, budget=2000, log=log)
        return log.read_bytes(), dense
    parts = []
    for i, rec in enumerate(records):
        dense.cache = EmbeddingCache(tmp_path / f"{name}-{i}" / "e.sqlite3")
        write_retrieval(dense, [rec], granularity=granularity, k=5, budget=2000, log=log)
        parts.append(log.read_bytes())
    return b"".join(parts), dense


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_rankings_are_identical_with_and_without_reuse(records, tmp_path, granularity):
    fresh, _ = _run(records, tmp_path, "off", granularity, None)
    store = tmp_path / "shared" / "embeddings.sqlite3"
    first = EmbeddingCache(store)  # experiment 1 sees half the questions
    earlier, _ = _run(records[:4], tmp_path, "exp1", granularity, first)
    shared = EmbeddingCache(store)  # experiment 2, all of them, on the same store
    reused, dense = _run(records, tmp_path, "exp2", granularity, shared)
    assert reused == fresh and fresh.startswith(earlier)
    assert 0 < shared.texts_embedded < shared.texts_seen - first.texts_seen  # it did reuse, across both
    assert len(dense.embedder.embedded) == shared.texts_embedded
    again = EmbeddingCache(store)  # a third run embeds nothing
    assert _run(records, tmp_path, "exp3", granularity, again)[0] == fresh and again.texts_embedded == 0


def test_a_text_is_embedded_once_across_questions(records, tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    _, dense = _run(records, tmp_path, "once", "session", cache)
    assert len(dense.embedder.embedded) == len(set(dense.embedder.embedded))  # never the same text twice
    assert cache.texts_embedded < cache.texts_seen  # and sessions did recur between the haystacks
