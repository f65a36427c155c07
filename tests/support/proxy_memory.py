"""A toy "third-party memory library" for tests of the model proxy (mnemetric.llm.proxy): it knows nothing of
Mnemetric's LLM layer and talks to models only with the openai SDK, as mem0 or a graph memory does. The adapter
(:class:`ToyLibraryMemory`, a UsesModelProxy system) points it at ``mnemetric.llm.proxy.active()``.

Per session ingested: one chat request ("extract the facts", response_format json_object) and one embeddings
request (the session's facts); per query: one embeddings request; ranking by cosine similarity. ``clock``
puts today's date in the extraction prompt (as libraries that write "Today's date is ..." do) and
``random_ids`` a fresh uuid4 per session: both make a rerun miss the cache.
"""

from __future__ import annotations

import datetime
import math
import uuid
from dataclasses import dataclass, field
from typing import Any

import openai

from mnemetric.llm import proxy as model_proxy
from mnemetric.longmemeval.memory import Retrieved, UsesModelProxy


class ToyLibrary:
    """The library: OpenAI base_url + key in, memories in and out."""

    def __init__(self, base_url: str, api_key: str, *, chat_model: str, embed_model: str, clock: bool = False,
                 random_ids: bool = False):
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=2)
        self.chat_model, self.embed_model, self.clock, self.random_ids = chat_model, embed_model, clock, random_ids
        self.items: list[tuple[str, list[float]]] = []

    def add(self, key: str, text: str) -> None:
        prompt = "Extract the facts worth remembering as JSON."
        if self.clock:
            prompt += f" Today's date is {datetime.date.today().isoformat()}."
        if self.random_ids:
            prompt += f" Memory id: {uuid.uuid4()}."
        reply = self.client.chat.completions.create(
            model=self.chat_model, temperature=0, response_format={"type": "json_object"},
            messages=[{"role": "system", "content": prompt}, {"role": "user", "content": text[:400]}])
        facts = reply.choices[0].message.content or ""
        vector = self.client.embeddings.create(model=self.embed_model, input=[facts]).data[0].embedding
        self.items.append((key, list(vector)))

    def search(self, text: str) -> list[tuple[str, float]]:
        query = self.client.embeddings.create(model=self.embed_model, input=text).data[0].embedding
        scored = [(key, _cosine(query, vec)) for key, vec in self.items]
        return sorted(scored, key=lambda kv: -kv[1])


def _cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)) or 1.0, math.sqrt(sum(x * x for x in b)) or 1.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


@dataclass
class ToyLibraryMemory(UsesModelProxy):
    """The adapter: a Mnemetric memory system over :class:`ToyLibrary`, built lazily on the running proxy."""

    name: str = "toy-library"
    chat_model: str = "toy-chat"
    embed_model: str = "toy-embed"
    clock: bool = False
    random_ids: bool = False
    library: Any = field(default=None, init=False, repr=False)
    sessions: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def _library(self) -> ToyLibrary:
        p = model_proxy.active()
        if self.library is None or self.library.client.base_url != p.base_url + "/":
            self.library = ToyLibrary(p.base_url, p.api_key, chat_model=self.chat_model, embed_model=self.embed_model,
                                      clock=self.clock, random_ids=self.random_ids)
        return self.library

    def reset(self) -> None:
        self._library().items = []
        self.sessions = {}

    def ingest(self, session) -> None:
        self.sessions[session.session_id] = len(session.messages)
        text = " ".join(m.content for m in session.messages if m.role == "user")
        self._library().add(session.session_id, f"[{session.date}] {text}")

    def retrieve(self, query, granularity: str) -> list[Retrieved]:
        ranked = self._library().search(query.text)
        if granularity == "session":
            return [Retrieved(key, None, score) for key, score in ranked]
        return [Retrieved(key, i, score) for key, score in ranked for i in range(self.sessions[key])]


@dataclass
class ToyTrajectoryMemory(UsesModelProxy):
    """The same toy library as a LongMemEval-V2 memory (insert / query): per trajectory inserted one chat
    request and one embeddings request; per query one embeddings request; the best trajectories' goals as items."""

    name: str = "toy-library-v2"
    chat_model: str = "toy-chat"
    embed_model: str = "toy-embed"
    top_k: int = 2
    library: Any = field(default=None, init=False, repr=False)
    goals: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    def _library(self) -> ToyLibrary:
        p = model_proxy.active()
        if self.library is None:
            self.library = ToyLibrary(p.base_url, p.api_key, chat_model=self.chat_model, embed_model=self.embed_model)
        return self.library

    def insert(self, trajectory) -> None:
        self.goals[trajectory.id] = trajectory.goal
        self._library().add(trajectory.id, f"{trajectory.goal} ({trajectory.start_url})")

    def query(self, text: str, image: str | None = None) -> list[dict[str, str]]:
        ranked = self._library().search(text)[: self.top_k]
        return [{"type": "text", "value": self.goals[key]} for key, _ in ranked]
