"""The HTTP core of the loopback OpenAI server (tests/support/openai_server.py): the threading server,
the request handler and its routing — chat completions and embeddings answered here (faults applied),
everything under the Files and Batches paths handed to ``fake.batch`` (tests/support/batch_server.py)."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

try:
    from tests.support.batch_server import PATHS as BATCH_PATHS
    from tests.support.openai_replies import Fault, error_body, model_not_found
except ImportError:  # run as a script: tests/support is on the path
    from batch_server import PATHS as BATCH_PATHS  # type: ignore[no-redef]
    from openai_replies import Fault, error_body, model_not_found  # type: ignore[no-redef]


class QuietHTTPServer(ThreadingHTTPServer):
    """Does not print a traceback when a client hangs up (timeouts, killed processes). Its listen backlog holds
    the connections a run opens at once (``llm.max_concurrency``: 32 by default): socketserver's 5 let the kernel
    drop the rest of a burst of connects, each retried by the client's TCP a second later — a stall no real
    API server has (measured: 40 judge requests at 32 in flight took 1.9 s against 1.0 s one at a time)."""

    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per reply
    """Request handler; ``fake`` (the FakeOpenAIServer) is set on a per-server subclass (see :func:`make_handler`)."""

    protocol_version = "HTTP/1.1"
    fake: Any

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def _route_path(self) -> str:
        """The request path without its query string or trailing slash."""
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        path = self._route_path()
        if path.startswith(BATCH_PATHS):
            self.fake.batch.handle(self, "GET", path, b"")
        else:
            self._send(404, error_body(404, f"Unknown path {path}"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self._route_path()
        if self.path.startswith(BATCH_PATHS):
            self.fake.batch.handle(self, "POST", path, raw)
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:  # includes an empty or cut-off body (a client killed mid-send)
            self._send(400, error_body(400, "Body is not valid JSON."))
            return
        record, fault = self.fake._arrive(path, body, raw)
        status, answered = 0, False
        try:
            status, answered = self._respond(path, body, fault)
        except ConnectionError:
            answered = False  # the client went away (timeout or killed)
        finally:
            self.fake._depart(record, status, answered)

    def _respond(self, path: str, body: dict[str, Any], fault: Fault | None) -> tuple[int, bool]:
        """Write the reply to one chat/embeddings request; (HTTP status, whether a whole reply was written)."""
        fake = self.fake
        if fault and fault.kind == "status":
            time.sleep(fake.latency)
            return self._send(fault.status, error_body(fault.status), fault.headers)
        time.sleep(fake.latency + (fault.seconds if fault and fault.kind == "slow" else 0.0))
        if str(body.get("model")) in fake.unknown_models:
            return self._send(404, model_not_found(str(body.get("model"))))
        chat = path.endswith("/chat/completions")
        kind = fault.reply if fault and fault.kind == "non_answer" else None
        if kind is None and fake.non_answer_for is not None and chat:
            kind = fake.non_answer_for(body)
        if kind and chat:
            payload = fake.non_answer_payload(body, kind)
        elif chat:
            payload = fake.chat_payload(body)
        elif path.endswith("/embeddings"):
            payload = fake.embeddings_payload(body)
        else:
            return self._send(404, error_body(404, f"Unknown path {path}"))
        data = _json(payload)
        if fault and fault.kind == "malformed":
            self._send_bytes(200, data[: len(data) // 2])
            return 200, False
        return self._send_bytes(200, data)

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, bool]:
        """Write ``payload`` as a JSON reply; (status, True)."""
        return self._send_bytes(status, _json(payload), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, bool]:
        """Write ``data`` as a reply (Content-Type application/json unless ``headers`` add one); (status, True)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        return status, True


def make_handler(server: Any) -> type[BaseHTTPRequestHandler]:
    """A :class:`Handler` subclass bound to ``server`` (a FakeOpenAIServer)."""
    return type("Handler", (Handler,), {"fake": server})
