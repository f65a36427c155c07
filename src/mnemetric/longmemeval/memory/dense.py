"""Dense retrieval: embed documents and query, rank by cosine similarity (vectors are normalised).

The kernel (backend choice, cached embedding, cosine scores, tie order) is the generic
:mod:`mnemetric.ranking`, shared with LongMemEval-V2; this class feeds it the store's documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemetric.embeddings import EmbeddingCache
from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.memory.base import Retrieved, TextMemory, check_granularity
from mnemetric.ranking import dense_scores, embedding_backend, ranked


@dataclass
class Dense(TextMemory):
    name: str = "dense"
    backend: str = "minilm"
    """"minilm" (in process, offline) or "openai" (an OpenAI-compatible /v1/embeddings endpoint)."""
    model: str | None = None
    base_url: str | None = None
    cache: EmbeddingCache = field(init=False)
    embedder: Any = field(init=False)
    executor: Any = field(default=None, init=False, repr=False)
    """The run's executor (:meth:`use_executor`); the openai backend's calls go through it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.cache = EmbeddingCache()
        self.embedder = embedding_backend(self.backend, self.model, self.base_url)

    def use_executor(self, executor: Any) -> None:
        """Called by the harness (CallsModels): an endpoint backend spends under the run's budget and
        counts usage in the run's ledger."""
        self.executor = executor

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        refs, texts = self.store.documents(granularity)
        scores = dense_scores(self.cache, self.embedder, texts, query.text, self.executor)
        return [Retrieved(refs[i].session_id, refs[i].turn_index, score) for i, score in ranked(scores)]
