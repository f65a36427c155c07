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
  Snowball stemming (needs PyStemmer). Its own name; not an upstream claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.memory.base import Retrieved, TextMemory, check_granularity, rank


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


_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class BM25(TextMemory):
    name: str = "bm25"
    k1: float = 1.5
    b: float = 0.75
    stopwords: str | None = "en"
    stemmer: str | None = None
    """Snowball language (e.g. "english"); needs the PyStemmer package."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._stem = _stemmer(self.stemmer)
        self._stop = _stopwords(self.stopwords)

    def tokenize(self, text: str) -> list[str]:
        words = [w for w in _WORD.findall(text.lower()) if w not in self._stop]
        return self._stem(words) if self._stem else words

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        import bm25s

        check_granularity(granularity)
        refs, texts = self.store.documents(granularity)
        if not refs:
            return []
        corpus = [self.tokenize(t) or ["\u2205"] for t in texts]  # bm25s cannot index an empty doc
        model = bm25s.BM25(k1=self.k1, b=self.b)
        model.index(corpus, show_progress=False)
        words = self.tokenize(query.text)
        # bm25s.get_scores fails on an empty token list (e.g. a stopword-only question): all ties.
        scores = model.get_scores(words) if words else np.zeros(len(refs))
        return rank(refs, scores)


def _stopwords(lang: str | None) -> frozenset[str]:
    if not lang:
        return frozenset()
    from bm25s.stopwords import STOPWORDS_EN

    if lang != "en":
        from mnemetric.errors import ConfigError

        raise ConfigError(f"memory.stopwords: only 'en' or null is supported, got {lang!r}")
    return frozenset(STOPWORDS_EN)


def _stemmer(lang: str | None):
    if not lang:
        return None
    try:
        import Stemmer
    except ImportError:
        from mnemetric.errors import ConfigError

        raise ConfigError("memory.stemmer is set but PyStemmer is not installed: `pip install PyStemmer`") from None
    return Stemmer.Stemmer(lang).stemWords
