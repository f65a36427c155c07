"""Text rankers over a plain list of texts: bm25 (bm25s) and dense (embeddings, cosine). Knows no benchmark.

Both families rank text with these kernels: LongMemEval's ``bm25`` / ``dense`` memory systems
(``mnemetric.longmemeval.memory``, documents = sessions or turns) and LongMemEval-V2's state-retrieval
baselines (``mnemetric.longmemeval_v2.baselines``, documents = trajectory states). They are Mnemetric's
own rankers, not an upstream claim (upstream's flat-bm25 lives in the V1 family as ``bm25-upstream``).

* Tokens (:class:`WordTokenizer`): ``\\w+`` runs (Unicode) of the lowercased text, minus the English
  stopwords of ``bm25s.stopwords.STOPWORDS_EN`` (``stopwords="en"``; ``None`` keeps every word), then
  optionally Snowball-stemmed (``stemmer="english"``, needs PyStemmer).
* bm25 (:func:`bm25_scores`): ``bm25s.BM25(k1, b)`` indexed on the tokenized texts. A text without a
  token is indexed as the single token ``"\\u2205"`` (bm25s cannot index an empty document); a query
  without a token (e.g. only stopwords) scores every text 0 (``bm25s.get_scores`` fails on it).
* dense (:func:`dense_scores`): texts and query embedded in one call through an
  :class:`~mnemetric.embeddings.EmbeddingCache`; vectors are unit-normalised by the backends, so the
  score ``s_i = v_i · q`` is the cosine similarity.
* Order (:func:`best_first`): descending score; equal scores keep the input order (a stable sort), so
  callers decide the tie order by the order of ``texts``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemetric.embeddings import EmbeddingCache, MiniLMBackend, OpenAIEmbeddingBackend
from mnemetric.errors import ConfigError

WORD = re.compile(r"\w+", re.UNICODE)
EMPTY_DOCUMENT = "\u2205"
"""The one token a text without tokens is indexed as."""
EMBEDDING_BACKENDS = ("minilm", "openai")


def best_first(scores: Sequence[float] | np.ndarray) -> list[int]:
    """Indices of ``scores`` by descending score; ties keep ascending index (stable)."""
    return sorted(range(len(scores)), key=lambda i: -float(scores[i]))


def stopword_set(lang: str | None, *, key: str = "memory") -> frozenset[str]:
    """bm25s's English stopwords for ``"en"``, nothing for ``None`` / ``""``; any other value is refused."""
    if not lang:
        return frozenset()
    if lang != "en":
        raise ConfigError(f"{key}.stopwords", f"only 'en' or null is supported, got {lang!r}")
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def snowball_stemmer(lang: str | None, *, key: str = "memory") -> Callable[[list[str]], list[str]] | None:
    """PyStemmer's ``stemWords`` for a Snowball language (e.g. ``"english"``), ``None`` when unset."""
    if not lang:
        return None
    try:
        import Stemmer
    except ImportError:
        raise ConfigError(f"{key}.stemmer", "is set but PyStemmer is not installed",
                          fix="pip install PyStemmer") from None
    return Stemmer.Stemmer(lang).stemWords


@dataclass(frozen=True)
class WordTokenizer:
    """Lowercased ``\\w+`` tokens, stopwords removed, optionally stemmed (see the module docstring)."""

    stopwords: str | None = "en"
    stemmer: str | None = None
    key: str = "memory"
    """The settings key named in errors (``memory`` for V1, ``v2`` for V2)."""
    _stop: frozenset[str] = field(init=False, repr=False, compare=False)
    _stem: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stem", snowball_stemmer(self.stemmer, key=self.key))
        object.__setattr__(self, "_stop", stopword_set(self.stopwords, key=self.key))

    def __call__(self, text: str) -> list[str]:
        words = [w for w in WORD.findall(text.lower()) if w not in self._stop]
        return self._stem(words) if self._stem else words


def bm25_scores(texts: Sequence[str], query: str, tokenize: Callable[[str], list[str]], *,
                k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """bm25s BM25(k1, b) score of every text for the query (one float per text, in text order)."""
    import bm25s

    if not texts:
        return np.zeros(0)
    corpus = [tokenize(t) or [EMPTY_DOCUMENT] for t in texts]
    model = bm25s.BM25(k1=k1, b=b)
    model.index(corpus, show_progress=False)
    words = tokenize(query)
    return model.get_scores(words) if words else np.zeros(len(texts))


def dense_scores(cache: EmbeddingCache, embedder: Any, texts: Sequence[str], query: str,
                 executor: Any = None) -> np.ndarray:
    """Cosine similarity of every text to the query: ``v_i · q`` over unit vectors (one embed call; an
    endpoint backend's calls go through ``executor``)."""
    if not texts:
        return np.zeros(0)
    vecs = cache.embed(embedder, [*texts, query], executor)
    return vecs[:-1] @ vecs[-1]


def embedding_backend(kind: str, model: str | None = None, base_url: str | None = None, *, key: str = "memory"):
    """The embedding backend by name: ``minilm`` (in process, offline) or ``openai`` (an
    OpenAI-compatible ``/v1/embeddings`` endpoint; ``model`` required)."""
    if kind == "minilm":
        return MiniLMBackend()
    if kind == "openai":
        if not model:
            raise ConfigError(f"{key}.model", "must name the embedding model for backend openai")
        return OpenAIEmbeddingBackend(model=model, base_url=base_url)
    raise ConfigError(f"{key}.backend", f"unknown {kind!r}; expected 'minilm' or 'openai'")


def ranked(scores: Sequence[float] | np.ndarray) -> list[tuple[int, float]]:
    """``(index, score)`` pairs best first (:func:`best_first` order)."""
    return [(i, float(scores[i])) for i in best_first(scores)]


@dataclass
class BM25Ranker:
    """Ranks a list of texts for a query with :func:`bm25_scores` and :class:`WordTokenizer`."""

    k1: float = 1.5
    b: float = 0.75
    stopwords: str | None = "en"
    stemmer: str | None = None
    key: str = "memory"
    tokenize: WordTokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.tokenize = WordTokenizer(self.stopwords, self.stemmer, key=self.key)

    def scores(self, texts: Sequence[str], query: str) -> np.ndarray:
        return bm25_scores(texts, query, self.tokenize, k1=self.k1, b=self.b)

    def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]:
        return ranked(self.scores(texts, query))


@dataclass
class DenseRanker:
    """Ranks a list of texts for a query by cosine similarity (:func:`dense_scores`), vectors cached."""

    backend: str = "minilm"
    model: str | None = None
    base_url: str | None = None
    key: str = "memory"
    cache: EmbeddingCache = field(init=False, repr=False)
    embedder: Any = field(init=False, repr=False)
    executor: Any = field(default=None, init=False, repr=False)
    """The run's executor (:meth:`use_executor`); an endpoint backend's calls go through it."""

    def __post_init__(self) -> None:
        self.embedder = embedding_backend(self.backend, self.model, self.base_url, key=self.key)
        self.cache = EmbeddingCache()

    def use_executor(self, executor: Any) -> None:
        """An endpoint backend spends under the run's budget and counts usage in its ledger."""
        self.executor = executor

    def scores(self, texts: Sequence[str], query: str) -> np.ndarray:
        return dense_scores(self.cache, self.embedder, texts, query, self.executor)

    def rank(self, texts: Sequence[str], query: str) -> list[tuple[int, float]]:
        return ranked(self.scores(texts, query))
