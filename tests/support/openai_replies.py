"""What the loopback OpenAI server (tests/support/openai_server.py) answers: chat and embeddings payloads,
the non-answer kinds, scripted faults (:class:`Fault`) and the OpenAI-shaped error bodies (:func:`api_error`).

Pure functions of the request body; :class:`FakeOpenAIServer` wraps them in overridable methods.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ReplyFn = Callable[[list[dict[str, Any]]], str]
NonAnswerFn = Callable[[dict[str, Any]], "str | None"]
NON_ANSWERS = ("null_content", "empty_content", "no_choices", "refusal", "content_filter")
"""Kinds of well-formed chat replies without an answer."""


def canonical_sha256(obj: Any) -> str:
    """sha256 of ``obj`` as canonical JSON (sorted keys, compact separators)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_reply(messages: list[dict[str, Any]]) -> str:
    """Echo the last message's content, prefixed with ``echo: ``."""
    last = messages[-1].get("content", "") if messages else ""
    return f"echo: {last}"


def fake_embedding(text: str, dim: int = 8) -> list[float]:
    """A deterministic unit-length vector derived from sha256(text)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(digest[i] - 127.5) / 127.5 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def approx_tokens(text: str) -> int:
    """The server's token count: ceil(len(text) / 4)."""
    return -(-len(text) // 4)


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, applied to one request.

    kind: "status" (reply ``status`` with ``headers``), "slow" (normal reply after ``seconds``),
    "malformed" (HTTP 200 with a truncated JSON body), "non_answer" (HTTP 200, a well-formed
    chat reply of kind ``reply`` from :data:`NON_ANSWERS`).
    """

    kind: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    reply: str = ""

    @classmethod
    def non_answer(cls, kind: str) -> Fault:
        """A well-formed chat reply without an answer (one of :data:`NON_ANSWERS`)."""
        if kind not in NON_ANSWERS:
            raise ValueError(f"unknown non-answer kind {kind!r}; expected one of {NON_ANSWERS}")
        return cls("non_answer", reply=kind)

    @classmethod
    def rate_limit(cls, retry_after: str | None = "1", retry_after_ms: str | None = None) -> Fault:
        """HTTP 429 with optional ``Retry-After`` / ``retry-after-ms`` headers."""
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        if retry_after_ms is not None:
            headers["retry-after-ms"] = retry_after_ms
        return cls("status", 429, headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        """An HTTP 5xx reply."""
        return cls("status", status)

    @classmethod
    def unauthorized(cls) -> Fault:
        """HTTP 401 as OpenAI sends it for a bad key."""
        return cls("status", 401)

    @classmethod
    def status_code(cls, status: int) -> Fault:
        """Any HTTP error status."""
        return cls("status", status)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        """A correct reply, sent only after ``seconds``."""
        return cls("slow", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 whose JSON body is cut off half-way."""
        return cls("malformed")


# -- payloads ------------------------------------------------------------------------------------
def chat_payload(body: dict[str, Any], reply: ReplyFn, model: str) -> dict[str, Any]:
    """A well-formed chat.completion object for ``body``: ``reply(messages)`` in each of ``n`` choices."""
    messages = body.get("messages") or []
    n = int(body.get("n") or 1)
    text = reply(messages)
    prompt = sum(approx_tokens(str(m.get("content", ""))) for m in messages)
    choices = [
        {"index": i, "message": {"role": "assistant", "content": text}, "logprobs": None,
         "finish_reason": "stop"}
        for i in range(n)
    ]
    completion = approx_tokens(text) * n
    return {
        "id": f"chatcmpl-{canonical_sha256(body)[:24]}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": choices,
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def strip_answer(payload: dict[str, Any], kind: str) -> dict[str, Any]:
    """Turn a chat.completion ``payload`` (in place) into a non-answer of ``kind`` (see :data:`NON_ANSWERS`)."""
    for choice in payload["choices"]:
        message = choice["message"]
        if kind == "null_content":
            message["content"] = None
        elif kind == "empty_content":
            message["content"] = ""
        elif kind == "refusal":
            message["content"], message["refusal"] = None, "I can't help with that."
        elif kind == "content_filter":
            message["content"], choice["finish_reason"] = None, "content_filter"
    if kind == "no_choices":
        payload["choices"] = []
        payload["usage"]["completion_tokens"] = 0
    elif kind != "empty_content":
        payload["usage"]["completion_tokens"] = 0
    payload["usage"]["total_tokens"] = payload["usage"]["prompt_tokens"] + payload["usage"]["completion_tokens"]
    return payload


def embeddings_payload(body: dict[str, Any], default_dim: int, model: str) -> dict[str, Any]:
    """A well-formed embeddings list object for ``body``: :func:`fake_embedding` of each input as JSON numbers,
    or with ``encoding_format: base64`` the base64 of those values rounded to little-endian float32 (so, as
    with the real API, a base64 vector is not the float one digit for digit)."""
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    dim = int(body.get("dimensions") or default_dim)
    vectors: list[Any] = [fake_embedding(t, dim) for t in texts]
    if body.get("encoding_format") == "base64":  # the API's wire format: little-endian float32, base64
        vectors = [base64.b64encode(struct.pack(f"<{dim}f", *v)).decode("ascii") for v in vectors]
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    tokens = sum(approx_tokens(t) for t in texts)
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


# -- error bodies --------------------------------------------------------------------------------
ERROR_MESSAGES = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("invalid_request_error", "Incorrect API key provided."),
    403: ("permission_denied", "You do not have access to this model."),
    404: ("not_found_error", "The model does not exist or you do not have access to it."),
    422: ("invalid_request_error", "Unprocessable entity."),
    429: ("rate_limit_exceeded", "Rate limit reached. Please try again later."),
}


def api_error(message: str, kind: str = "invalid_request_error", **fields: Any) -> dict[str, Any]:
    """An OpenAI error body ``{"error": {"message", "type", **fields}}`` (the one shape every endpoint uses)."""
    return {"error": {"message": message, "type": kind, **fields}}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """The error body for an HTTP ``status`` (:data:`ERROR_MESSAGES`; anything else is a server error)."""
    kind, default = ERROR_MESSAGES.get(status, ("server_error", "The server had an error."))
    return api_error(message or default, kind, param=None, code=None)


def model_not_found(model: str) -> dict[str, Any]:
    """HTTP 404 ``model_not_found``, as OpenAI answers a retired snapshot."""
    return api_error(f"The model `{model}` does not exist or you do not have access to it.",
                     param=None, code="model_not_found")
