"""mem0 (the ``mem0ai`` package, extra ``mem0``) as a memory system: ``-S memory=mem0``.

Per question, :meth:`Mem0.reset` builds a fresh ``mem0.Memory`` on an in-memory Qdrant (local mode, no
server, nothing on disk) and an in-memory history database. Each session is given to ``Memory.add`` in
chronological order — whole, or in runs of ``chunk_turns`` messages — with its opaque session id, the
message positions of the chunk and its date as metadata; mem0's LLM extracts memories (facts) from it
and its embedder indexes them. :meth:`Mem0.retrieve` runs ``Memory.search`` for the question (``top_k``
memories) and maps each hit back to the chunk it came from: at session granularity the sessions in the
order of their first hit; at turn granularity the chunk's messages of ``roles`` (with ``chunk_turns: 0``
that is every such turn of the session, so turn metrics are coarse; ``chunk_turns: 2`` ranks user/assistant
pairs).

Its LLM and embedder are OpenAI clients pointed at the harness's model proxy (:mod:`.libraries`): every
call is cached, budgeted and counted. Telemetry is off (``MEM0_TELEMETRY=False`` before mem0 is imported)
and mem0's home folder (``MEM0_DIR``) defaults to ``$MNEMETRIC_CACHE_DIR/mem0`` instead of ``~/.mem0``.

Determinism (measured by tests/longmemeval/test_memory_libraries.py: the same question twice sends
byte-identical requests, so a rerun is answered by the cache): mem0 2.2's extraction prompt carries the
clock ("Observation Date" / "Current Date" = today). The adapter freezes it to the session's date (the
undated v2 replay says ``unknown``). Memory ids (uuid4) never enter mem0's prompts (it numbers the
existing memories 0, 1, ...); the history store's clock times do not either. mem0's spaCy lemmatizer and
entity linker are skipped when spaCy is absent (mem0 logs a warning); with spaCy installed mem0 tries to
download ``en_core_web_sm`` — keep spaCy out of the environment for offline runs.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mnemetric.longmemeval.adapted import MemorySession, Query
from mnemetric.longmemeval.memory.base import Retrieved, check_granularity
from mnemetric.longmemeval.memory.libraries import chunks, endpoint, require

LIBRARIES = ("mem0ai",)
"""The distributions this adapter wraps (their versions land in the memory fingerprint)."""
EXTRA = "mem0"
USER = "longmemeval-user"
"""mem0's scope id; one store per question, so one fixed user."""

_SESSION_DATE: contextvars.ContextVar[str | None] = contextvars.ContextVar("mem0_session_date", default=None)


def _import_mem0(system: str):
    os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
    if not os.environ.get("MEM0_DIR"):
        from mnemetric.llm.cache import default_cache_dir

        os.environ["MEM0_DIR"] = str(default_cache_dir() / "mem0")
    require("qdrant_client", system=system, extra=EXTRA)
    main = require("mem0.memory.main", system=system, extra=EXTRA)
    _telemetry_off(main)
    _freeze_prompt_date(main)
    return main


def _telemetry_off(main: Any) -> None:
    """Also when mem0 was imported before the environment said so (its flag is read at import)."""
    import mem0.memory.telemetry as telemetry

    main.MEM0_TELEMETRY = telemetry.MEM0_TELEMETRY = False
    for name in ("client_telemetry", "_oss_telemetry_instance"):
        if getattr(telemetry, name, None) is not None:
            getattr(telemetry, name).posthog = None


def _freeze_prompt_date(main: Any) -> None:
    """Make mem0's extraction prompt carry the session's date instead of today's (idempotent)."""
    original = main.generate_additive_extraction_prompt
    if getattr(original, "_mnemetric_frozen", False):
        return

    @functools.wraps(original)
    def dated(*args: Any, **kwargs: Any) -> str:
        date = _SESSION_DATE.get()
        if date is not None and kwargs.get("current_date") is None:
            kwargs["current_date"] = date
        return original(*args, **kwargs)

    dated._mnemetric_frozen = True  # type: ignore[attr-defined]
    main.generate_additive_extraction_prompt = dated


@dataclass
class Mem0:
    """mem0 over the question's haystack (module docstring). Conf: conf/memory/mem0.yaml."""

    name: str = "mem0"
    llm_model: str = "gpt-4o-mini-2024-07-18"
    embedding_model: str = "text-embedding-3-small"
    embedding_dims: int = 1536
    temperature: float = 0.0
    top_k: int = 50
    """How many memories one search returns (each maps back to its session / turns)."""
    threshold: float = 0.0
    """mem0's minimum search score (its default is 0.1)."""
    chunk_turns: int = 0
    """Messages per ``Memory.add`` call: 0 = the whole session in one call."""
    roles: tuple[str, ...] = ("user", "assistant")
    """Which messages are given to mem0 (and ranked at turn granularity)."""
    base_url: str | None = None
    """Without the harness's proxy: an OpenAI-compatible endpoint (else $OPENAI_BASE_URL)."""
    api_key_env: str = "OPENAI_API_KEY"
    uses_model_proxy: ClassVar[bool] = True
    """The retrieve stage serves its model proxy around this system (mnemetric.llm.proxy)."""
    _memory: Any = field(default=None, init=False, repr=False)
    _sessions: dict[str, MemorySession] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.roles = tuple(self.roles)
        chunks(0, self.chunk_turns)  # checks the setting
        _import_mem0(self.name)

    def __getstate__(self) -> dict[str, Any]:  # a worker gets the settings, never a live store
        return {k: v for k, v in self.__dict__.items() if k != "_memory"} | {"_memory": None}

    def config(self) -> dict[str, Any]:
        """The mem0 ``MemoryConfig`` (as a dict) for one question."""
        from qdrant_client import QdrantClient

        where = endpoint(self.name, self.base_url, self.api_key_env)
        model = {"openai_base_url": where.base_url, "api_key": where.api_key}
        return {
            "llm": {"provider": "openai", "config": {"model": self.llm_model, "temperature": self.temperature,
                                                     **model}},
            "embedder": {"provider": "openai", "config": {"model": self.embedding_model,
                                                          "embedding_dims": self.embedding_dims, **model}},
            "vector_store": {"provider": "qdrant", "config": {
                "client": QdrantClient(":memory:"), "collection_name": "mnemetric",
                "embedding_model_dims": self.embedding_dims}},
            "history_db_path": ":memory:",
        }

    def reset(self) -> None:
        main = _import_mem0(self.name)
        self.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # local Qdrant: "payload indexes have no effect"
            logging.getLogger("mem0").setLevel(logging.ERROR)
            self._memory = main.Memory.from_config(self.config())
        self._sessions = {}

    def close(self) -> None:
        db = getattr(self._memory, "db", None)
        if db is not None and hasattr(db, "close"):
            db.close()
        self._memory = None

    def ingest(self, session: MemorySession) -> None:
        if self._memory is None:
            self.reset()
        self._sessions[session.session_id] = session
        token = _SESSION_DATE.set(session.date or "unknown")
        try:
            for part in chunks(len(session.messages), self.chunk_turns):
                messages = [{"role": m.role, "content": m.content} for i in part
                            if (m := session.messages[i]).role in self.roles]
                if not messages:
                    continue
                if session.prefix:
                    messages[0]["content"] = f"{session.prefix}{messages[0]['content']}"
                self._memory.add(messages, user_id=USER, metadata={
                    "session_id": session.session_id, "first": part.start, "stop": part.stop,
                    "session_date": session.date})
        finally:
            _SESSION_DATE.reset(token)

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        check_granularity(granularity)
        if self._memory is None or not self._sessions:
            return []
        hits = self._memory.search(f"{query.prefix}{query.text}", filters={"user_id": USER},
                                   top_k=self.top_k, threshold=self.threshold)
        return self.ranked(hits.get("results") or [], granularity)

    def ranked(self, hits: list[dict[str, Any]], granularity: str) -> list[Retrieved]:
        """mem0's hits (best first) → session or turn items, first occurrence kept."""
        out: list[Retrieved] = []
        seen: set[tuple[str, int | None]] = set()
        for hit in hits:
            meta = hit.get("metadata") or {}
            sid, score = meta.get("session_id"), float(hit.get("score") or 0.0)
            session = self._sessions.get(sid)
            if session is None:  # the harness reports ids it never gave out; keep it visible
                refs = [(str(sid), None)]
            elif granularity == "session":
                refs = [(sid, None)]
            else:
                refs = [(sid, i) for i in range(int(meta.get("first", 0)), int(meta.get("stop", 0)))
                        if i < len(session.messages) and session.messages[i].role in self.roles]
            for ref in refs:
                if ref not in seen:
                    seen.add(ref)
                    out.append(Retrieved(ref[0], ref[1], score))
        return out
