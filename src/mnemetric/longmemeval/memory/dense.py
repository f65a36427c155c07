"""Dense retrieval: embed documents and query, rank by cosine similarity (vectors are normalised)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemetric.longmemeval.adapted import Query
from mnemetric.longmemeval.memory.base import Retrieved, TextMemory, check_granularity, rank
from mnemetric.embeddings import EmbeddingCache, MiniLMBackend, OpenAIEmbeddingBackend


@dataclass
class Dense(TextMemory):
    name: str = "dense"
    backend: str = "minilm"
    """"minilm" (in process, offline) or "openai" (an OpenAI-compatible /v1/embeddings endpoint)."""
    model: str | None = None
    base_url: str | None = None
    cache: EmbeddingCache = field(init=False)
    embedder: Any = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.cache = EmbeddingCache()
        self.embedder = _backend(self.backend, self.model, self.base_url)

    def configure_llm(self, llm: dict, stats) -> None:
        """Called by the harness: an endpoint backend spends under the run's budget and counts usage."""
        if isinstance(self.embedder, OpenAIEmbeddingBackend):
            self.embedder.configure(llm, stats)

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        refs, texts = self.store.documents(granularity)
        if not refs:
            return []
        vecs = self.cache.embed(self.embedder, [*texts, query.text])
        scores = vecs[:-1] @ vecs[-1]
        return rank(refs, scores)


def _backend(kind: str, model: str | None, base_url: str | None):
    if kind == "minilm":
        return MiniLMBackend()
    if kind == "openai":
        if not model:
            from mnemetric.errors import ConfigError

            raise ConfigError("memory.model must name the embedding model for backend openai")
        return OpenAIEmbeddingBackend(model=model, base_url=base_url)
    from mnemetric.errors import ConfigError

    raise ConfigError(f"memory.backend: unknown {kind!r}; expected 'minilm' or 'openai'")
