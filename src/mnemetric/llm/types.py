"""Request and result types of the LLM layer (no I/O; imported by the client and the dry run alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mnemetric.errors import MnemetricError


class LLMRequestError(MnemetricError):
    """A model request failed in a way the user must fix (or the server kept failing)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0, no_reply: bool = False):
        self.status = status
        self.attempts = attempts
        self.no_reply = no_reply
        """True when every attempt went without a usable reply (timeouts, connection errors, 408/409/429/5xx):
        the server, not the request, failed — a caller may fail the one question instead of the run."""
        super().__init__(message)


class MalformedResponse(Exception):
    """The server answered HTTP 200 with a body that is not a usable OpenAI reply (retried)."""


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the server."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """prompt + completion."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ChatResult:
    """One chat answer. ``model`` is the model the server says it used (``response.model``).

    ``cost_usd`` is the cost of this response's work: its recorded usage priced by the price
    table (resolved model first, then the requested one), the same whether it came from the
    cache or the network; None if the model has no price. What a run *paid* is counted in
    :class:`~mnemetric.llm.budget.UsageStats` (``usd``), never here.

    ``failure`` is set when the server gave no usable answer (a non-answer: no choices, null or
    empty content, a refusal, a finish_reason other than stop/length) even after the bounded
    non-answer retries; then ``text`` is "" and the response was not cached.
    """

    text: str
    model: str
    usage: Usage
    request_sha256: str
    cached: bool
    cost_usd: float | None
    finish_reason: str | None = None
    texts: tuple[str, ...] = ()
    """All choices' texts (``n > 1``); ``text`` is the first."""
    failure: str | None = None
    """Why there is no answer (e.g. "content is null"), or None for a usable answer."""
    attempts: int = 1
    """Responses received for this request in this call (> 1 after a non-answer retry; 0 for a hit)."""
    text_sources: tuple[str, ...] = ()
    """Where each of ``texts`` came from: "content", "content_parts" or "reasoning" (the request's
    ``text_from`` rule, :mod:`mnemetric.llm.replies`); () for a non-answer."""

    @property
    def ok(self) -> bool:
        """True for a usable answer."""
        return self.failure is None

    @property
    def text_source(self) -> str | None:
        """Where ``text`` came from ("content", "content_parts", "reasoning"), None for a non-answer."""
        return self.text_sources[0] if self.text_sources else None


@dataclass(frozen=True)
class ChatRequest:
    """One chat request for :func:`plan` (the dry run).

    ``text_from`` is how the reply's text is read ("content", the default, "content_or_reasoning" or
    "content_or_parts"; :mod:`mnemetric.llm.replies`). It is not sent and not part of the cache key: the stored response
    is the server's, whichever rule reads it.
    """

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    text_from: str = "content"

    @classmethod
    def coerce(cls, obj: ChatRequest | Mapping[str, Any]) -> ChatRequest:
        """Accept a ChatRequest or a mapping ``{"model", "messages", "text_from"?, **params}``."""
        if isinstance(obj, ChatRequest):
            return obj
        rest = {k: v for k, v in obj.items() if k not in ("model", "messages", "params", "text_from")}
        return cls(str(obj["model"]), list(obj["messages"]), {**dict(obj.get("params") or {}), **rest},
                   str(obj.get("text_from") or "content"))
