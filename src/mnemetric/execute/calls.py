"""A model call as data (:class:`ModelCall`) and what became of it (:class:`CallOutcome`).

A :class:`ModelCall` is everything that decides a request — endpoint kind, base URL, model, messages,
output parameters — plus how its reply is read (``text_from``, not sent, not in the key), who asks
(``role``) and for what (``tag``, e.g. a question id). Its :attr:`ModelCall.key` is the response
cache's request sha256 (:func:`mnemetric.llm.cache.request_key`), so a call made today, a call in a
batch file and a cached row name the same request.

A :class:`CallOutcome` is one of :data:`KINDS`:

* ``answer``: a usable reply (``text``, ``model`` the server named, ``usage``);
* ``non_answer``: the server replied, but with no usable text (``reason``; never a verdict);
* ``failure``: no reply could be had for this call and the call said it tolerates that (``status``,
  ``reason``; e.g. upstream V2's empty answer after an HTTP 400);
* ``pending``: an executor whose results come back later has not got this one yet.

Every outcome carries the request sha256 and the parameters actually sent (:func:`sent_params`), so the
verdicts written from it are their own evidence: no manifest needs to read the cache to show what was
sent.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from mnemetric.llm.cache import key_payload, normalize_base_url, output_params, request_key
from mnemetric.llm.embed_wire import FLOAT, check_encoding
from mnemetric.llm.replies import check_text_from
from mnemetric.llm.types import Usage

ANSWER: Final = "answer"
NON_ANSWER: Final = "non_answer"
FAILURE: Final = "failure"
PENDING: Final = "pending"
KINDS: Final = (ANSWER, NON_ANSWER, FAILURE, PENDING)
NO_REPLY: Final = -1
"""In :attr:`ModelCall.tolerate`: a call that got no reply after all its attempts (timeouts, connection errors,
408/409/429/5xx) becomes a ``failure`` outcome (its question fails; failures are never cached, so a rerun asks
again) instead of stopping the run. A request the server refused (other 4xx), a missing key or the budget
still stop it."""
ENDPOINTS: Final = ("chat", "embeddings")
_TIMED: contextvars.ContextVar[bool] = contextvars.ContextVar("mnemetric_latency_measured", default=False)


@contextlib.contextmanager
def measuring_latency() -> Iterator[None]:
    """Calls made inside are timed by the harness (e.g. a LongMemEval-V2 memory's ``query``): an executor
    that would defer them (the Batch API) sends them live instead."""
    token = _TIMED.set(True)
    try:
        yield
    finally:
        _TIMED.reset(token)


def latency_measured() -> bool:
    """Whether the caller is inside :func:`measuring_latency`."""
    return _TIMED.get()


def _freeze(value: Any) -> Any:
    """A hashable, read-only copy of JSON-like data (dicts keep their key order)."""
    if isinstance(value, Mapping):
        return tuple((str(k), _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ("__list__", *(_freeze(v) for v in value))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        if value and value[0] == "__list__":
            return [_thaw(v) for v in value[1:]]
        return {k: _thaw(v) for k, v in value}
    return value


def sent_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The output parameters of a request as sent (transport options and None values dropped): what the
    cache key hashes and what a judged line records as ``params_sent``."""
    return output_params(params)


@dataclass(frozen=True, eq=False)
class ModelCall:
    """One model request as data. Build with :meth:`chat` (or :meth:`embedding`); immutable.

    ``base_url`` is normalised at build time (``$OPENAI_BASE_URL`` or the OpenAI default when None),
    so :attr:`key` is a pure function of the call. ``tolerate`` lists HTTP statuses that make this
    call a ``failure`` outcome instead of stopping the run (default: none tolerated).
    """

    role: str
    endpoint: str
    base_url: str
    model: str
    _content: Any
    _params: Any
    text_from: str = "content"
    tag: str | None = None
    tolerate: tuple[int, ...] = ()
    batch_size: int | None = None
    """Embeddings: at most this many texts per request (transport; not in the key). None: the executor's."""
    transport_url: str | None = field(default=None, repr=False)
    """The base URL as given, credentials included, for the transport only (never in the key, repr or a
    ledger); :attr:`base_url` is the normalised one without credentials."""
    timed: bool = False
    """The call's latency is measured: never deferred to a Batch API (not in the key)."""

    @classmethod
    def chat(cls, *, role: str, model: str, messages: Sequence[Mapping[str, Any]],
             params: Mapping[str, Any] | None = None, base_url: str | None = None, text_from: str = "content",
             tag: str | None = None, tolerate: Sequence[int] = (), timed: bool = False) -> ModelCall:
        """A chat-completions call (``messages`` as the OpenAI API takes them; ``timed``: its latency is measured)."""
        check_text_from(text_from)
        params = dict(params or {})
        if params.get("stream"):
            raise ValueError("a ModelCall cannot stream (the cache stores whole replies)")
        return cls(role, "chat", normalize_base_url(base_url), str(model), _freeze([dict(m) for m in messages]),
                   _freeze(params), text_from, tag, tuple(int(s) for s in tolerate), None, base_url, bool(timed))

    @classmethod
    def embedding(cls, *, role: str, model: str, text: str, params: Mapping[str, Any] | None = None,
                  base_url: str | None = None, tag: str | None = None, batch_size: int | None = None,
                  timed: bool = False, encoding_format: str = FLOAT) -> ModelCall:
        """An embeddings call for ONE text (the cache keeps one row per text; executors batch them,
        ``batch_size`` texts per request at most when given). ``encoding_format`` is the vector's wire format
        the request asks for (:mod:`mnemetric.llm.embed`): "float" (the default) is not written into the params,
        so a float call's key and body are what they always were; "base64" is, so it is sent and keyed."""
        params = dict(params or {})
        encoding = params.pop("encoding_format", None) or encoding_format
        check_encoding(encoding)
        if encoding != FLOAT:
            params["encoding_format"] = encoding
        return cls(role, "embeddings", normalize_base_url(base_url), str(model), str(text), _freeze(params),
                   "content", tag, (), batch_size, base_url, bool(timed))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages (a fresh copy)."""
        if self.endpoint != "chat":
            raise AttributeError("an embeddings call has no messages (see .text)")
        return _thaw(self._content)

    @property
    def text(self) -> str:
        """The input of an embeddings call."""
        if self.endpoint != "embeddings":
            raise AttributeError("a chat call has no single input text (see .messages)")
        return self._content

    @property
    def encoding_format(self) -> str:
        """An embeddings call's wire format for the vector ("float" or "base64")."""
        return str(self.params.get("encoding_format") or FLOAT)

    @property
    def params(self) -> dict[str, Any]:
        """Every request parameter given (a fresh copy; transport options included)."""
        return _thaw(self._params)

    @property
    def params_sent(self) -> dict[str, Any]:
        """The output parameters sent (:func:`sent_params`)."""
        return sent_params(self.params)

    @cached_property
    def payload(self) -> dict[str, Any]:
        """The JSON object the cache hashes (:func:`mnemetric.llm.cache.key_payload`)."""
        content = self.messages if self.endpoint == "chat" else self.text
        return key_payload(self.endpoint, self.base_url, self.model, content, self.params)

    @cached_property
    def key(self) -> str:
        """The response cache's request sha256 (the same key a live call, a batch line and a cached row use)."""
        return request_key(self.payload)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelCall) and (self.key, self.text_from, self.role, self.tag, self.tolerate) == (
            other.key, other.text_from, other.role, other.tag, other.tolerate)

    def __hash__(self) -> int:
        return hash((self.key, self.text_from, self.role, self.tag))

    def tolerates(self, status: int | None, *, no_reply: bool = False) -> bool:
        """Does this call turn an error with ``status`` (``no_reply``: no reply after every attempt) into a
        ``failure`` outcome?"""
        return (no_reply and NO_REPLY in self.tolerate) or (status is not None and not no_reply
                                                              and status in self.tolerate)


@dataclass(frozen=True)
class CallOutcome:
    """What became of one :class:`ModelCall` (module docstring)."""

    kind: str
    key: str
    """The call's request sha256."""
    params_sent: Mapping[str, Any]
    """The output parameters of the request (what the server was asked with)."""
    model: str | None = None
    """The model the server said it used (answers and non-answers; "" when the reply named none)."""
    text: str = ""
    texts: tuple[str, ...] = ()
    """Every choice's text (``n`` > 1); ``text`` is the first."""
    text_source: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    """The cost of this reply's work (its usage at the price table's price), cached or not."""
    reason: str | None = None
    """Why there is no answer (non-answer, failure, pending)."""
    status: int | None = None
    """The HTTP status of a tolerated failure."""
    attempts: int = 0
    cached: bool = False
    """Served from the response cache (per run; never written to a tracked file)."""
    embedding: tuple[float, ...] | None = None
    """The vector of an embeddings answer."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"outcome kind {self.kind!r} is not one of {KINDS}")

    @property
    def ok(self) -> bool:
        """True for a usable answer."""
        return self.kind == ANSWER

    @property
    def request_sha256(self) -> str:
        return self.key
