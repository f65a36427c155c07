"""BM25 baselines.

* :class:`UpstreamBM25` (``bm25-upstream``) reproduces upstream flat-bm25
  (xiaowu0162/LongMemEval src/retrieval/run_retrieval.py @ 9e0b455f): rank_bm25 0.2.2 BM25Okapi
  with its defaults over documents split on single spaces (no lowercasing, no punctuation
  handling), query = question text split the same way, ranking = numpy argsort of the scores,
  reversed — so rankings equal upstream's, ties included: the corpus is built in upstream's file
  order (``MemorySession.position``), not in the chronological replay order, because the order
  among tied scores follows corpus positions (and even rank_bm25's average idf sums in corpus
  order). Every other memory system sees the chronological replay.
* :class:`BM25` (``bm25``): bm25s with lowercasing, word tokens, English stopwords and optional
  Snowball stemming (needs PyStemmer). Its own name; not an upstream claim. The kernel (tokens,
  scoring, tie order) is the generic :mod:`mnemetric.ranking`, shared with LongMemEval-V2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.memory.base import Retrieved, TextMemory, check_granularity
from mnemetric.ranking import BM25Ranker


@dataclass
class UpstreamBM25(TextMemory):
    name: str = "bm25-upstream"

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        from rank_bm25 import BM25Okapi

        check_granularity(granularity)
        refs, texts = self.store.documents(granularity, order="haystack")
        if not refs:
            return []
        scores = BM25Okapi([t.split(" ") for t in texts]).get_scores(query.text.split(" "))
        order = np.argsort(scores)[::-1]
        return [Retrieved(refs[i].session_id, refs[i].turn_index, float(scores[i])) for i in order]


@dataclass
class BM25(TextMemory):
    """bm25s over the store's documents through :class:`mnemetric.ranking.BM25Ranker` (the generic kernel
    shared with LongMemEval-V2); ties keep ingestion order."""

    name: str = "bm25"
    k1: float = 1.5
    b: float = 0.75
    stopwords: str | None = "en"
    stemmer: str | None = None
    """Snowball language (e.g. "english"); needs the PyStemmer package."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._ranker = BM25Ranker(self.k1, self.b, self.stopwords, self.stemmer)

    def tokenize(self, text: str) -> list[str]:
        return self._ranker.tokenize(text)

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        refs, texts = self.store.documents(granularity)
        return [Retrieved(refs[i].session_id, refs[i].turn_index, score)
                for i, score in self._ranker.rank(texts, query.text)]
