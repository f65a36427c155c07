"""The memory-system protocol, its optional capabilities, and a small helper for systems that index text.

Every system implements :class:`MemorySystem`. Two optional capabilities are declared by the
system itself and honoured by the harness for any class that declares them (no concrete class
is special-cased):

* :class:`CallsModels` — the system calls a model (an embedding endpoint, an LLM); it defines
  ``use_executor(executor)`` and is given the run's executor (:mod:`mnemetric.execute`) once, before
  the first question, so its calls (:class:`~mnemetric.execute.ModelCall` records it hands to
  ``executor.run``) spend under the run's one budget and are counted in its one usage ledger. The
  capability is the generic one of :mod:`mnemetric.execute.access` (re-exported here), which the
  LongMemEval-V2 harness honours too.
* :class:`LabelledCeiling` — a ceiling baseline allowed to rank by the labels. It still ranks
  nothing by itself (it never sees a label): the harness replaces its ranking by the targets first,
  in upstream corpus order, then the rest, as upstream's oracle retriever does
  (src/retrieval/run_retrieval.py, xiaowu0162/LongMemEval @ 9e0b455f). Declared by inheriting
  :class:`LabelledCeiling` or by a class attribute ``labelled_ceiling = True``.
* :class:`UsesModelProxy` — the system wraps a third-party library that speaks the OpenAI API (mem0, a
  graph memory, ...). The harness serves the loopback model proxy (:mod:`mnemetric.llm.proxy`) around the
  run's questions (conf ``memory_llm``), attributes each request to the system and to the phase — "ingest"
  (reset + the haystack's sessions) or "query" (retrieve) — of the question, and runs the system in its own
  process. The system points its library at ``mnemetric.llm.proxy.active().base_url`` with the proxy's
  dummy ``api_key`` (e.g. when it is first reset). Declared by inheriting :class:`UsesModelProxy` or by a
  class attribute ``uses_model_proxy = True``. Also the generic capability of :mod:`mnemetric.execute.access`
  (re-exported here), which the LongMemEval-V2 harness honours for upstream's own baselines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

from mnemetric.execute.access import (CallsModels, UsesModelProxy, calls_models,  # noqa: F401 (re-exported)
                                     uses_model_proxy)
from mnemetric.longmemeval.adapted import MemorySession, Query
from mnemetric.longmemeval.rules import GRANULARITIES  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Retrieved:
    """One ranked item: a whole session, or one turn of it."""

    session_id: str
    """The opaque session id the system was given (e.g. "s007")."""
    turn_index: int | None = None
    """0-based position in the session's messages (turn granularity); None for a whole session."""
    score: float = 0.0


@runtime_checkable
class MemorySystem(Protocol):
    """Implement these three methods (plus a ``name``) to evaluate a memory system."""

    name: str

    def reset(self) -> None:
        """Forget everything (called before each question's haystack)."""

    def ingest(self, session: MemorySession) -> None:
        """Store one session; sessions arrive in chronological order."""

    def retrieve(self, query: Query, granularity: str) -> list[Retrieved]:
        """Ranked items for the query, best first ("session" or "turn" granularity)."""


class LabelledCeiling:
    """Optional capability: a labelled ceiling (see the module docstring). Inherit to declare it."""

    labelled_ceiling: ClassVar[bool] = True


def is_labelled_ceiling(memory: object) -> bool:
    """Whether ``memory`` declares :class:`LabelledCeiling` (``labelled_ceiling`` is exactly True)."""
    return getattr(memory, "labelled_ceiling", False) is True


@dataclass
class SessionStore:
    """Keeps ingested sessions and turns them into documents (shared by the text baselines)."""

    roles: tuple[str, ...] = ("user",)
    """Which turns are indexed; upstream indexes user turns only."""
    sessions: list[MemorySession] = field(default_factory=list)

    def reset(self) -> None:
        self.sessions = []

    def add(self, session: MemorySession) -> None:
        self.sessions.append(session)

    def documents(self, granularity: str, order: str = "ingestion") -> tuple[list[Retrieved], list[str]]:
        """(item refs, texts). Session text = indexed turns joined by one space.

        ``order``: "ingestion" (the chronological replay) or "haystack" (the upstream file order,
        by ``MemorySession.position``: what upstream's retrievers index).
        """
        if order not in ("ingestion", "haystack"):
            raise ValueError(f"order must be 'ingestion' or 'haystack', got {order!r}")
        sessions = sorted(self.sessions, key=lambda s: s.position) if order == "haystack" else self.sessions
        refs: list[Retrieved] = []
        texts: list[str] = []
        for s in sessions:
            if granularity == "session":
                refs.append(Retrieved(s.session_id))
                texts.append(" ".join(m.content for m in s.messages if m.role in self.roles))
                continue
            for i, m in enumerate(s.messages):
                if m.role in self.roles:
                    refs.append(Retrieved(s.session_id, i))
                    texts.append(m.content)
        return refs, texts


@dataclass
class TextMemory:
    """Base for the baselines that keep the ingested sessions and rank their text at retrieve time."""

    name: str = ""
    roles: tuple[str, ...] = ("user",)
    """Which turns are indexed; upstream indexes user turns only."""
    store: SessionStore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.store = SessionStore(tuple(self.roles))

    def reset(self) -> None:
        self.store.reset()

    def ingest(self, session: MemorySession) -> None:
        self.store.add(session)


def check_granularity(granularity: str) -> None:
    if granularity not in GRANULARITIES:
        from mnemetric.errors import ConfigError

        raise ConfigError(f"unknown granularity {granularity!r}; expected one of {', '.join(GRANULARITIES)}")


def rank(refs: list[Retrieved], scores) -> list[Retrieved]:
    """Best first by score; ties keep ingestion order (stable)."""
    order = sorted(range(len(refs)), key=lambda i: -float(scores[i]))
    return [Retrieved(refs[i].session_id, refs[i].turn_index, float(scores[i])) for i in order]
