"""The model proxy's HTTP side: OpenAI request bodies → :class:`~mnemetric.execute.ModelCall` records, and
outcomes → OpenAI reply bodies (generic; :mod:`mnemetric.llm.proxy` holds the contract).

Served: ``POST <prefix>/chat/completions`` and ``POST <prefix>/embeddings`` (prefix ``/v1``, or ``/r<n>/v1`` for a
route to another real endpoint: :meth:`mnemetric.llm.proxy.ModelProxy.route`), streaming off.
Chat parameters the ``openai`` SDK takes by name travel as they are; any other key of the body goes in
``extra_body`` (so the request the real endpoint sees is the one the library made). Embeddings inputs are
a string or a list of strings; ``encoding_format`` "float" (the API's default when the body names none) or
"base64" (what the ``openai`` SDK sends when its caller names none) travels with each call: the real endpoint
is asked in the library's format, the cache keys a base64 request apart from a float one, and a base64 reply
is the exact little-endian float32 bytes the server sent (:mod:`mnemetric.llm.embed_wire`).

Every error reply has the OpenAI error shape and the header ``x-should-retry: false``: the harness has
already retried what was worth retrying, and a library's own retries would only pay again.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mnemetric.execute.calls import ANSWER, CallOutcome, ModelCall
from mnemetric.llm.embed_wire import BASE64, ENCODINGS, FLOAT, encode_base64

PREFIX = "/v1"
CHAT, EMBEDDINGS = f"{PREFIX}/chat/completions", f"{PREFIX}/embeddings"
SERVED = f"POST {CHAT} and POST {EMBEDDINGS}"
ROLE = "memory"
"""The role recorded with every response the proxy's requests put in the cache (``mnemetric cache list``)."""
@functools.cache
def _chat_named() -> frozenset[str]:
    """The chat parameters the SDK takes by name (read from the SDK on first use: importing it costs a second)."""
    from mnemetric.llm.sdk import openai

    return frozenset(inspect.signature(openai.resources.chat.completions.Completions.create).parameters) - {
        "self", "model", "messages", "stream", "stream_options", "timeout", "extra_headers", "extra_query"}
_EMBED_NAMED = frozenset({"dimensions", "user"})


class Rejected(Exception):
    """A request the proxy will not serve: HTTP ``status`` with ``message`` (the library sees it)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        self.status, self.message, self.kind = status, message, kind
        super().__init__(message)


def _model(body: Mapping[str, Any], path: str) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise Rejected(400, f"mnemetric model proxy: POST {path} needs a string 'model'")
    return model


def _no_stream(body: Mapping[str, Any], path: str) -> None:
    if body.get("stream"):
        raise Rejected(400, f"mnemetric model proxy: streaming is off (POST {path} asked for stream=true): the "
                            "harness caches and counts whole replies; configure the memory library not to stream")


def chat_call(body: Mapping[str, Any], base_url: str, tag: str | None) -> ModelCall:
    """The ModelCall of a chat-completions body (:class:`Rejected` if the proxy cannot serve it)."""
    _no_stream(body, CHAT)
    model = _model(body, CHAT)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise Rejected(400, f"mnemetric model proxy: POST {CHAT} needs 'messages', a non-empty list of objects")
    params: dict[str, Any] = {}
    extra = dict(body.get("extra_body") or {}) if isinstance(body.get("extra_body"), dict) else {}
    for key, value in body.items():
        if key in ("model", "messages", "stream", "stream_options", "extra_body") or value is None:
            continue
        if key in _chat_named():
            params[key] = value
        else:
            extra[key] = value
    if extra:
        params["extra_body"] = extra
    return ModelCall.chat(role=ROLE, model=model, messages=messages, params=params, base_url=base_url, tag=tag,
                          timed=True)  # timed: a library waits for each reply, never deferred to a Batch API


def embedding_calls(body: Mapping[str, Any], base_url: str, tag: str | None) -> tuple[list[ModelCall], str]:
    """One ModelCall per input text of an embeddings body, and the encoding the reply is asked in."""
    _no_stream(body, EMBEDDINGS)
    model = _model(body, EMBEDDINGS)
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise Rejected(400, f"mnemetric model proxy: POST {EMBEDDINGS} needs 'input' as a string or a non-empty "
                            "list of strings (token arrays are not served: configure the library to send text, "
                            "e.g. langchain's OpenAIEmbeddings(check_embedding_ctx_length=False))")
    encoding = body.get("encoding_format") or FLOAT
    if encoding not in ENCODINGS:
        raise Rejected(400, f"mnemetric model proxy: encoding_format {encoding!r} is not served "
                            f"({', '.join(ENCODINGS)})")
    unknown = sorted(set(body) - {"model", "input", "encoding_format", "stream", *_EMBED_NAMED})
    if unknown:
        raise Rejected(400, f"mnemetric model proxy: POST {EMBEDDINGS} does not take {', '.join(unknown)}")
    params = {k: body[k] for k in sorted(_EMBED_NAMED) if body.get(k) is not None}
    return [ModelCall.embedding(role=ROLE, model=model, text=t, params=params, base_url=base_url, tag=tag,
                                timed=True, encoding_format=encoding) for t in texts], encoding


def chat_reply(outcome: CallOutcome, call: ModelCall, stored: Mapping[str, Any] | None,
               tokens: tuple[int, int]) -> dict[str, Any]:
    """The reply body: the server's own reply as the response cache stored it, else one built from the
    outcome (same text, model and usage; deterministic, no clock)."""
    if stored is not None:
        return dict(stored)
    choices = [{"index": i, "message": {"role": "assistant", "content": t}, "logprobs": None, "finish_reason": "stop"}
               for i, t in enumerate(outcome.texts or (outcome.text,))]
    prompt, completion = outcome.usage.prompt_tokens or tokens[0], outcome.usage.completion_tokens or tokens[1]
    return {"id": f"chatcmpl-{call.key[:24]}", "object": "chat.completion", "created": 0,
            "model": outcome.model or call.model, "choices": choices,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def embeddings_reply(calls: Sequence[ModelCall], outcomes: Sequence[CallOutcome], encoding: str,
                     prompt_tokens: int) -> dict[str, Any]:
    data = []
    for i, out in enumerate(outcomes):
        vector = list(out.embedding or ())
        value: Any = encode_base64(vector) if encoding == BASE64 else vector
        data.append({"object": "embedding", "index": i, "embedding": value})
    model = next((o.model for o in outcomes if o.model), calls[0].model)
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}}


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def all_answered(outcomes: Sequence[CallOutcome]) -> bool:
    return all(o.kind == ANSWER for o in outcomes)


class QuietServer(ThreadingHTTPServer):
    """No traceback on stderr when a client hangs up; request threads never keep the process alive."""

    daemon_threads = True
    allow_reuse_address = False  # a port in use is an error, never shared

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """Reads a JSON body and hands it to ``proxy.handle(path, body)`` → (status, reply body)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    proxy: Any = None  # set on a per-proxy subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _reject_other(self, method: str) -> None:
        status, body = self.proxy.unserved(method, self._path())
        self._send(status, body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._reject_other("GET")

    def do_PUT(self) -> None:  # noqa: N802
        self._reject_other("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._reject_other("DELETE")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self._path()
        if self.proxy.split(path)[1] not in (CHAT, EMBEDDINGS):
            self._reject_other("POST")
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError:
            self._send(400, error_body(f"mnemetric model proxy: the body of POST {path} is not a JSON object"))
            return
        status, reply = self.proxy.handle(path, body)
        self._send(status, reply)

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status >= 400:
            self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def handler_for(proxy: Any) -> type[Handler]:
    return type("ProxyHandler", (Handler,), {"proxy": proxy})
