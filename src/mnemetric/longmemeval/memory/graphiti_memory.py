"""Graphiti (the ``graphiti-core`` package on an embedded Kuzu database, extra ``graphiti``): a temporal
knowledge-graph memory, ``-S memory=graphiti``.

Per question, :meth:`Graphiti.reset` opens a fresh in-memory Kuzu database (no server, nothing on disk) and
a ``graphiti_core.Graphiti`` on it (the default group: graphiti-core 0.31's Kuzu driver cannot take a
``group_id``, its request scoping reads a Neo4j-only attribute). Each session (whole, or in runs of ``chunk_turns`` messages) becomes one
*episode*, added in chronological order with ``reference_time`` = the session's date: Graphiti's LLM
extracts entities and facts (edges) from it, dedupes them against the graph and dates them; its embedder
indexes them (the adapter creates the full-text indices itself: see :func:`_fulltext_indices`).
:meth:`Graphiti.retrieve` runs Graphiti's hybrid search (BM25 + cosine, fused by RRF; no
cross-encoder) for ``top_k`` facts and maps each fact to the episodes it was extracted from, i.e. to the
sessions (and, at turn granularity, the chunk's messages of ``roles``), in the order of first hit.

Its LLM is Graphiti's ``OpenAIGenericClient`` (chat completions with ``json_schema`` structured outputs:
the endpoint the harness's model proxy serves; its ``OpenAIClient`` would call the Responses API) and its
embedder ``OpenAIEmbedder``, both pointed at the proxy (:mod:`.libraries`). Telemetry is off
(``GRAPHITI_TELEMETRY_ENABLED=false``). graphiti-core 0.31 marks its Kuzu backend deprecated (the Kuzu
project is no longer maintained); it is still the one embedded graph database Graphiti runs on with no
server, hence the choice here.

Determinism: episodes get fixed ids (uuid5 of the question's query id, session id and chunk), the clock
Graphiti stamps on episodes is the session date (``reference_time``); measured in
tests/longmemeval/memory/test_graphiti.py (the same question twice: same request bodies, hence a rerun is
answered by the cache). Entity and fact ids are uuid4 inside the library; the test measures whether they
reach a prompt.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from mnemetric.longmemeval.adapted import MemorySession, Query
from mnemetric.longmemeval.memory.base import Retrieved, check_granularity
from mnemetric.longmemeval.memory.libraries import chunks, endpoint, require

LIBRARIES = ("graphiti-core", "kuzu")
"""The distributions this adapter wraps (their versions land in the memory fingerprint)."""
EXTRA = "graphiti"
EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
"""reference_time of an undated session (the v2 replay): fixed, never the clock."""
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})\D+(?:\d\D*)?(\d{2}):(\d{2})")


def session_time(date: str | None) -> datetime:
    """LongMemEval's "2023/05/20 (Sat) 02:21" as a UTC datetime (EPOCH when undated or unparsable)."""
    m = _DATE.search(date or "")
    if not m:
        return EPOCH
    y, mo, d, h, mi = (int(x) for x in m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=timezone.utc)


def _import_graphiti(system: str) -> Any:
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    logging.getLogger("graphiti_core").setLevel(logging.ERROR)
    require("kuzu", system=system, extra=EXTRA)
    return require("graphiti_core", system=system, extra=EXTRA)


def _fulltext_indices(driver: Any) -> None:
    """Create the full-text indices Graphiti's hybrid search reads (graphiti-core 0.31's
    ``KuzuDriver.build_indices_and_constraints`` is a no-op, so search would fail on a missing index). Kuzu
    ships its FTS extension built in: nothing is downloaded."""
    import kuzu
    from graphiti_core.driver.driver import GraphProvider
    from graphiti_core.graph_queries import get_fulltext_indices

    conn = kuzu.Connection(driver.db)
    try:
        for statement in get_fulltext_indices(GraphProvider.KUZU):
            conn.execute(statement)
    finally:
        conn.close()


@dataclass
class Graphiti:
    """Graphiti on Kuzu over the question's haystack (module docstring). Conf: conf/memory/graphiti.yaml."""

    name: str = "graphiti"
    llm_model: str = "gpt-4o-mini-2024-07-18"
    small_llm_model: str = "gpt-4o-mini-2024-07-18"
    embedding_model: str = "text-embedding-3-small"
    embedding_dims: int = 1536
    temperature: float = 0.0
    top_k: int = 50
    """Facts (edges) per search."""
    chunk_turns: int = 0
    """Messages per episode: 0 = one episode per session."""
    roles: tuple[str, ...] = ("user", "assistant")
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    uses_model_proxy: ClassVar[bool] = True
    _graph: Any = field(default=None, init=False, repr=False)
    _loop: Any = field(default=None, init=False, repr=False)
    _episodes: dict[str, tuple[str, range]] = field(default_factory=dict, init=False, repr=False)
    _sessions: dict[str, MemorySession] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.roles = tuple(self.roles)
        chunks(0, self.chunk_turns)
        _import_graphiti(self.name)

    def __getstate__(self) -> dict[str, Any]:  # a worker gets the settings, never a live graph
        return {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_loop")} | {"_graph": None,
                                                                                          "_loop": None}

    def _run(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _build(self) -> Any:
        graphiti_core = _import_graphiti(self.name)
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.driver.kuzu_driver import KuzuDriver
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

        where = endpoint(self.name, self.base_url, self.api_key_env)
        llm = LLMConfig(api_key=where.api_key, base_url=where.base_url, model=self.llm_model,
                        small_model=self.small_llm_model, temperature=self.temperature)
        embedder = OpenAIEmbedder(OpenAIEmbedderConfig(api_key=where.api_key, base_url=where.base_url,
                                                       embedding_model=self.embedding_model,
                                                       embedding_dim=self.embedding_dims))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "the Kuzu backend is deprecated" (module doc)
            driver = KuzuDriver(db=":memory:")
        _fulltext_indices(driver)
        return graphiti_core.Graphiti(graph_driver=driver, llm_client=OpenAIGenericClient(llm),
                                      embedder=embedder, cross_encoder=OpenAIRerankerClient(llm))

    def reset(self) -> None:
        self.close()
        self._graph = self._build()
        self._episodes, self._sessions = {}, {}

    def close(self) -> None:
        if self._graph is not None:
            self._run(self._graph.close())
        self._graph = None

    def ingest(self, session: MemorySession) -> None:
        from graphiti_core.nodes import EpisodeType

        if self._graph is None:
            self.reset()
        self._sessions[session.session_id] = session
        for part in chunks(len(session.messages), self.chunk_turns):
            lines = [f"{m.role}: {m.content}" for i in part if (m := session.messages[i]).role in self.roles]
            if not lines:
                continue
            added = self._run(self._graph.add_episode(
                name=f"{session.session_id}:{part.start}", episode_body=session.prefix + "\n".join(lines),
                source_description="conversation session", reference_time=session_time(session.date),
                source=EpisodeType.message))
            self._episodes[added.episode.uuid] = (session.session_id, part)

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        if self._graph is None or not self._sessions:
            return []
        edges = self._run(self._graph.search(f"{query.prefix}{query.text}", num_results=self.top_k))
        return self.ranked([list(getattr(e, "episodes", None) or []) for e in edges], granularity)

    def ranked(self, hits: list[list[str]], granularity: str) -> list[Retrieved]:
        """Each fact's episodes (best fact first) → session or turn items, first occurrence kept."""
        out: list[Retrieved] = []
        seen: set[tuple[str, int | None]] = set()
        for rank, episodes in enumerate(hits):
            score = 1.0 / (rank + 1)
            for episode in episodes:
                sid, part = self._episodes.get(episode, (episode, range(0)))
                session = self._sessions.get(sid)
                if session is None or granularity == "session":
                    refs = [(sid, None)]
                else:
                    refs = [(sid, i) for i in part if session.messages[i].role in self.roles]
                for ref in refs:
                    if ref not in seen:
                        seen.add(ref)
                        out.append(Retrieved(ref[0], ref[1], score))
        return out
