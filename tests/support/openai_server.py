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
Modules: tests/support/openai_replies.py (payloads, non-answers, :class:`Fault`, error bodies),
tests/support/openai_http.py (HTTP server core and routing), tests/support/batch_server.py (Files and
Batches). Every request is logged (thread-safe) with its path, parsed body and ``body_sha256``: the sha256
of the body's canonical JSON, so tests can tell whether the *same* request arrived twice.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

try:
    from tests.support import openai_replies as replies
    from tests.support.batch_server import BatchAPI
    from tests.support.openai_http import Handler as _Handler, QuietHTTPServer as _QuietHTTPServer, make_handler
    from tests.support.openai_replies import (  # noqa: F401 - the public surface tests import from here
        ERROR_MESSAGES, NON_ANSWERS, Fault, NonAnswerFn, ReplyFn, approx_tokens, canonical_sha256, default_reply,
        fake_embedding)
except ImportError:  # run as a script: tests/support is on the path
    import openai_replies as replies  # type: ignore[no-redef]
    from batch_server import BatchAPI  # type: ignore[no-redef]
    from openai_http import Handler as _Handler, QuietHTTPServer as _QuietHTTPServer, make_handler  # type: ignore[no-redef]
    from openai_replies import (  # type: ignore[no-redef]  # noqa: F401
        ERROR_MESSAGES, NON_ANSWERS, Fault, NonAnswerFn, ReplyFn, approx_tokens, canonical_sha256, default_reply,
        fake_embedding)


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
        self._httpd = _QuietHTTPServer((host, port), make_handler(self))
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
        """A well-formed chat.completion object for ``body`` (:func:`openai_replies.chat_payload`)."""
        return replies.chat_payload(body, self.reply, self.resolved_model(str(body.get("model"))))

    def non_answer_payload(self, body: dict[str, Any], kind: str) -> dict[str, Any]:
        """A well-formed chat.completion of ``kind`` (see :data:`NON_ANSWERS`) for ``body``."""
        return replies.strip_answer(self.chat_payload(body), kind)

    def embeddings_payload(self, body: dict[str, Any]) -> dict[str, Any]:
        """A well-formed embeddings list object for ``body`` (:func:`openai_replies.embeddings_payload`)."""
        return replies.embeddings_payload(body, self.embedding_dim, self.resolved_model(str(body.get("model"))))


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
