"""A small, scriptable OpenAI-compatible HTTP server for tests and benchmarks.

It speaks just enough of the OpenAI REST API for the real ``openai`` SDK to talk to it:
``POST /v1/chat/completions`` and ``POST /v1/embeddings``, with well-formed JSON replies, and the
Files and Batches API (``server.batch``: tests/support/batch_server.py, states driven by the test).

Use it in-process as a context manager::

    with FakeOpenAIServer(latency=0.05) as server:
        server.add_faults(Fault.rate_limit(retry_after="1"), Fault.server_error())
        client = LLMClient(base_url=server.base_url, api_key="sk-test")
        ...
        assert server.count == 3

or as a script (for subprocess tests and benchmarks)::

    python tests/support/openai_server.py --port 0 --latency-ms 100 --log requests.jsonl

which prints ``listening on http://127.0.0.1:PORT/v1`` on stdout and serves until SIGINT/SIGTERM.

Faults are consumed one per arriving request (any endpoint), in the order they were queued.
Besides HTTP-level faults there are *non-answers*: well-formed HTTP 200 chat replies that carry no
answer (``Fault.non_answer(kind)`` with a kind of :data:`NON_ANSWERS`: null content, empty
content, no choices, a refusal, finish_reason "content_filter"). ``non_answer_for`` (a function of
the request body returning a kind or None) scripts them per request instead, independent of
arrival order.
Every request is logged (thread-safe) with its path, parsed body and ``body_sha256``: the sha256
of the body's canonical JSON, so tests can tell whether the *same* request arrived twice.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import signal
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    from tests.support.batch_server import PATHS as BATCH_PATHS, BatchAPI
except ImportError:  # run as a script: tests/support is on the path
    from batch_server import PATHS as BATCH_PATHS, BatchAPI  # type: ignore[no-redef]

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


@dataclass
class RequestRecord:
    """One request as the server saw it."""

    path: str
    body: dict[str, Any]
    body_sha256: str
    received_at: float
    answered: bool = False
    status: int = 0
    raw: bytes = b""
    """The body's bytes as they arrived (what the client serialised, key order and all)."""


ERROR_MESSAGES = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("invalid_request_error", "Incorrect API key provided."),
    403: ("permission_denied", "You do not have access to this model."),
    404: ("not_found_error", "The model does not exist or you do not have access to it."),
    422: ("invalid_request_error", "Unprocessable entity."),
    429: ("rate_limit_exceeded", "Rate limit reached. Please try again later."),
}


class FakeOpenAIServer:
    """OpenAI-compatible server on 127.0.0.1 in a background thread (port 0 = any free port)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        reply: ReplyFn | None = None,
        model_map: dict[str, str] | None = None,
        embedding_dim: int = 8,
        log_path: str | None = None,
        non_answer_for: NonAnswerFn | None = None,
        unknown_models: set[str] | frozenset[str] = frozenset(),
    ):
        self.latency = latency
        self.unknown_models = set(unknown_models)
        """Models this server does not serve: HTTP 404 ``model_not_found``, as OpenAI answers a retired snapshot."""
        self.reply = reply or default_reply
        self.non_answer_for = non_answer_for
        self.model_map = dict(model_map or {})
        self.embedding_dim = embedding_dim
        self.log_path = log_path
        self._lock = threading.Lock()
        self._faults: deque[Fault] = deque()
        self.requests: list[RequestRecord] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.batch = BatchAPI(self)
        """The Files and Batches API (tests/support/batch_server.py)."""
        self._httpd = _QuietHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port."""
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting and inspection ----------------------------------------------------------------
    def add_faults(self, *faults: Fault) -> None:
        """Queue faults; each arriving request takes the next one."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def count(self) -> int:
        """How many requests have arrived (all endpoints, including faulted ones)."""
        with self._lock:
            return len(self.requests)

    @property
    def answered(self) -> int:
        """How many successful (HTTP 200, well-formed) replies were fully written."""
        with self._lock:
            return sum(1 for r in self.requests if r.answered and r.status == 200)

    def keys(self) -> list[str]:
        """``body_sha256`` of every request received, in arrival order."""
        with self._lock:
            return [r.body_sha256 for r in self.requests]

    # -- internals used by the handler -----------------------------------------------------------
    def _arrive(self, path: str, body: dict[str, Any], raw: bytes = b"") -> tuple[RequestRecord, Fault | None]:
        record = RequestRecord(path, body, canonical_sha256(body), time.time(), raw=raw)
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self._faults.popleft() if self._faults else None
        return record, fault

    def _depart(self, record: RequestRecord, status: int, answered: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            record.status = status
            record.answered = answered
            if self.log_path:
                line = {"path": record.path, "body_sha256": record.body_sha256, "status": status,
                        "answered": answered, "received_at": record.received_at}
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(line) + "\n")

    def resolved_model(self, requested: str) -> str:
        """The model name echoed back for ``requested``."""
        return self.model_map.get(requested, requested)

    def chat_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """A well-formed chat.completion object for ``body``."""
        messages = body.get("messages") or []
        n = int(body.get("n") or 1)
        text = self.reply(messages)
        prompt = sum(approx_tokens(str(m.get("content", ""))) for m in messages)
        choices = [
            {"index": i, "message": {"role": "assistant", "content": text}, "logprobs": None,
             "finish_reason": "stop"}
            for i in range(n)
        ]
        completion = approx_tokens(text) * n
        return {
            "id": f"chatcmpl-{canonical_sha256(body)[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": self.resolved_model(str(body.get("model"))),
            "choices": choices,
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }

    def non_answer_payload(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        """A well-formed chat.completion of ``kind`` (see :data:`NON_ANSWERS`) for ``body``."""
        payload = self.chat_payload(body)
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

    def embeddings_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """A well-formed embeddings list object for ``body``: :func:`fake_embedding` of each input as JSON numbers,
        or with ``encoding_format: base64`` the base64 of those values rounded to little-endian float32 (so, as
        with the real API, a base64 vector is not the float one digit for digit)."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(body.get("dimensions") or self.embedding_dim)
        vectors: list[Any] = [fake_embedding(t, dim) for t in texts]
        if body.get("encoding_format") == "base64":  # the API's wire format: little-endian float32, base64
            vectors = [base64.b64encode(struct.pack(f"<{dim}f", *v)).decode("ascii") for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        tokens = sum(approx_tokens(t) for t in texts)
        return {"object": "list", "data": data, "model": self.resolved_model(str(body.get("model"))),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class _QuietHTTPServer(ThreadingHTTPServer):
    """Does not print a traceback when a client hangs up (timeouts, killed processes)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per reply
    """Request handler; ``fake`` is set on a per-server subclass (see :func:`_make_handler`)."""

    protocol_version = "HTTP/1.1"
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.startswith(BATCH_PATHS):
            self.fake.batch.handle(self, "GET", path, b"")
        else:
            self._send(404, _error_body(404, f"Unknown path {path}"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith(BATCH_PATHS):
            self.fake.batch.handle(self, "POST", self.path.split("?", 1)[0].rstrip("/"), raw)
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:  # includes an empty or cut-off body (a client killed mid-send)
            self._send(400, _error_body(400, "Body is not valid JSON."))
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        record, fault = self.fake._arrive(path, body, raw)
        status, answered = 0, False
        try:
            status, answered = self._respond(path, body, fault)
        except ConnectionError:
            answered = False  # the client went away (timeout or killed)
        finally:
            self.fake._depart(record, status, answered)

    def _respond(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, bool]:
        fake = self.fake
        if fault and fault.kind == "status":
            time.sleep(fake.latency)
            self._send(fault.status, _error_body(fault.status), fault.headers)
            return fault.status, True
        time.sleep(fake.latency + (fault.seconds if fault and fault.kind == "slow" else 0.0))
        if str(body.get("model")) in fake.unknown_models:
            self._send(404, _model_not_found(str(body.get("model"))))
            return 404, True
        kind = fault.reply if fault and fault.kind == "non_answer" else None
        if kind is None and fake.non_answer_for is not None and path.endswith("/chat/completions"):
            kind = fake.non_answer_for(body)
        if kind and path.endswith("/chat/completions"):
            payload = fake.non_answer_payload(body, kind)
        elif path.endswith("/chat/completions"):
            payload = fake.chat_payload(body)
        elif path.endswith("/embeddings"):
            payload = fake.embeddings_payload(body)
        else:
            self._send(404, _error_body(404, f"Unknown path {path}"))
            return 404, True
        data = json.dumps(payload).encode("utf-8")
        if fault and fault.kind == "malformed":
            self._send_bytes(200, data[: len(data) // 2])
            return 200, False
        self._send_bytes(200, data)
        return 200, True

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode("utf-8"), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"fake": server})


def _error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, default = ERROR_MESSAGES.get(status, ("server_error", "The server had an error."))
    return {"error": {"message": message or default, "type": kind, "param": None, "code": None}}


def _model_not_found(model: str) -> dict[str, Any]:
    return {"error": {"message": f"The model `{model}` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "param": None, "code": "model_not_found"}}


def main(argv: list[str] | None = None) -> int:
    """Run the server in the foreground until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 = any free port)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before every reply")
    parser.add_argument("--log", default=None, help="append one JSON line per request to this file")
    parser.add_argument("--non-answer", choices=NON_ANSWERS, help="answer every chat request with this non-answer")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(port=args.port, latency=args.latency_ms / 1000.0, log_path=args.log,
                              non_answer_for=(lambda body: args.non_answer) if args.non_answer else None)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    print(f"listening on {server.base_url}", flush=True)
    done.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
