"""The generic text rankers (mnemetric.ranking): worked examples by hand, and bm25 against a naive
Lucene-variant BM25 written here (the variant bm25s uses by default)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemetric.embeddings import EmbeddingCache
from mnemetric.errors import ConfigError
from mnemetric.ranking import (BM25Ranker, DenseRanker, WordTokenizer, best_first, bm25_scores, dense_scores,
                               embedding_backend, stopword_set)


def test_best_first_is_descending_and_ties_keep_input_order():
    assert best_first([0.5, 2.0, 0.5, 2.0, -1.0]) == [1, 3, 0, 2, 4]
    assert best_first(np.zeros(3)) == [0, 1, 2]
    assert best_first([]) == []


def test_tokens_are_lowercased_words_without_english_stopwords():
    assert WordTokenizer()("The Cat's HAT, again!") == ["cat", "s", "hat", "again"]
    assert WordTokenizer(stopwords=None)("The Cat's HAT") == ["the", "cat", "s", "hat"]
    assert WordTokenizer(stemmer="english")("Running cats ran") == ["run", "cat", "ran"]
    assert WordTokenizer()("Übergröße café") == ["übergröße", "café"]  # \w is Unicode
    assert {"the", "a", "and"} <= stopword_set("en") and stopword_set(None) == frozenset()


def test_bm25_worked_example():
    """Docs [apple banana apple] [banana cherry] [cherry], query "apple cherry", k1 1.5, b 0.75, no stopwords.
    N = 3, avgdl = 2; idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)); tf part = tf / (tf + k1 (1 - b + b dl / avgdl))."""
    idf_apple, idf_cherry = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    expected = [idf_apple * 2 / (2 + 1.5 * (0.25 + 0.75 * 3 / 2)),   # 0.48287...
                idf_cherry * 1 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2)),  # 0.18800...
                idf_cherry * 1 / (1 + 1.5 * (0.25 + 0.75 * 1 / 2))]  # 0.24258...
    texts = ["apple banana apple", "banana cherry", "cherry"]
    scores = bm25_scores(texts, "apple cherry", WordTokenizer(stopwords=None))
    assert scores.tolist() == pytest.approx(expected, rel=1e-6)
    assert [i for i, _ in BM25Ranker(stopwords=None).rank(texts, "Apple, CHERRY?")] == [0, 2, 1]


def test_bm25_empty_texts_and_stopword_only_queries():
    tok = WordTokenizer()
    assert bm25_scores([], "apple", tok).tolist() == []
    assert bm25_scores(["apple pie", "the"], "the of", tok).tolist() == [0.0, 0.0]  # no query token: all tie
    # a text without tokens is indexed as one placeholder token: a doc of length 1 that matches nothing
    scores = bm25_scores(["apple", "", "apple pear"], "apple", tok)
    assert scores[1] == 0.0 and scores[0] > scores[2] > 0
    assert BM25Ranker().rank(["x", "y", "z"], "the") == [(0, 0.0), (1, 0.0), (2, 0.0)]


WORDS = st.sampled_from(["apple", "pear", "plum", "fig", "kiwi", "lime"])


def naive_lucene_bm25(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    docs = [d or ["\u2205"] for d in docs]
    n, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    out = []
    for d in docs:
        tf, total = Counter(d), 0.0
        for q in set(query):
            if tf[q]:
                df = sum(q in other for other in docs)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += idf * tf[q] / (tf[q] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(total)
    return out


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.lists(WORDS, max_size=6), min_size=1, max_size=6),
       query=st.lists(WORDS, min_size=1, max_size=3, unique=True),
       k1=st.sampled_from([0.9, 1.2, 1.5]), b=st.sampled_from([0.0, 0.5, 0.75, 1.0]))
def test_bm25_equals_a_naive_lucene_bm25_and_ranks_stably(docs, query, k1, b):
    texts = [" ".join(d) for d in docs]
    expected = naive_lucene_bm25(docs, query, k1, b)
    ranker = BM25Ranker(k1=k1, b=b, stopwords=None)
    assert ranker.scores(texts, " ".join(query)).tolist() == pytest.approx(expected, rel=1e-5, abs=1e-6)
    order = [i for i, _ in ranker.rank(texts, " ".join(query))]
    # best first; among (near-)equal naive scores the earlier text first
    assert all(expected[a] > expected[c] - 1e-5 for a, c in zip(order, order[1:]))
    assert all(a < c for a, c in zip(order, order[1:]) if abs(expected[a] - expected[c]) < 1e-9)


@dataclass
class TableEmbedder:
    """A backend whose vectors are written by hand (unit vectors); records what it embeds."""

    table: dict[str, list[float]]
    backend_id: str = "table-test"
    seen: list[str] = field(default_factory=list)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return np.asarray([self.table[t] for t in texts], np.float32)


TABLE = {"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [0.0, 1.0], "a2": [1.0, 0.0], "q": [0.8, 0.6]}


def test_dense_scores_are_cosines_and_the_cache_serves_a_rerun(tmp_path):
    cache = EmbeddingCache(tmp_path / "emb.sqlite3")
    emb = TableEmbedder(TABLE)
    # q·a = 0.8, q·b = 0.48 + 0.48 = 0.96, q·c = 0.6, q·a2 = 0.8
    scores = dense_scores(cache, emb, ["a", "b", "c", "a2"], "q")
    assert scores.tolist() == pytest.approx([0.8, 0.96, 0.6, 0.8], abs=1e-6)
    assert best_first(scores) == [1, 0, 3, 2]  # a and a2 tie: input order
    assert sorted(emb.seen) == ["a", "a2", "b", "c", "q"]
    emb.seen.clear()
    dense_scores(cache, emb, ["c", "a"], "q")
    assert emb.seen == [] and dense_scores(cache, emb, [], "q").tolist() == []


def test_dense_ranker_ranks_with_its_embedder(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMETRIC_CACHE_DIR", str(tmp_path))
    ranker = DenseRanker()
    ranker.embedder = TableEmbedder(TABLE)
    assert [i for i, _ in ranker.rank(["c", "a", "b"], "q")] == [2, 1, 0]
    assert (tmp_path / "embeddings.sqlite3").is_file()


def test_bad_settings_name_the_callers_key():
    with pytest.raises(ConfigError, match=r"v2\.memory\.stopwords: only 'en' or null"):
        BM25Ranker(stopwords="de", key="v2.memory")
    with pytest.raises(ConfigError, match=r"memory\.backend: unknown 'word2vec'"):
        embedding_backend("word2vec")
    with pytest.raises(ConfigError, match=r"v2\.memory\.model: must name the embedding model"):
        embedding_backend("openai", key="v2.memory")
