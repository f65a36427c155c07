"""The loopback model proxy: third-party code gets the harness's cache, budget and ledger by ``base_url``.

Generic (knows no family). While a :class:`ModelProxy` is open it serves an OpenAI-compatible endpoint on
127.0.0.1, and sends every request it gets through the run's executor (:mod:`mnemetric.execute`: the
response cache, the run's ONE budget and usage ledger, the retry policy, the non-answer rule) to the real
endpoint configured in the harness. A memory library (mem0, a graph memory, a researcher's own) is pointed
at it by ``base_url``; it gets a dummy API key: the real key never leaves the harness.

Contract (what an adapter relies on)::

    from mnemetric.llm import proxy as model_proxy

    with ModelProxy(executor, base_url=None, port=0) as proxy:       # the harness (stage retrieve, `mnemetric retrieve`)
        with proxy.attribute(system="mem0", phase="ingest", question_id="q1"):
            ...                                                         # the library's calls are counted here

    p = model_proxy.active()            # an adapter: the running proxy, or a clear MnemetricError
    OpenAI(base_url=p.base_url, api_key=p.api_key)                      # any OpenAI-speaking library

* Served: ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` (:mod:`mnemetric.llm.proxy_http`).
  ``stream=true`` → HTTP 400 naming the rule; any other path or method → HTTP 404 naming the path and what
  is served. ``base_url`` ends in ``/v1``; ``api_key`` is :data:`DUMMY_KEY`.
* ``port``: 0 (default) takes a free port; a port in use is a :class:`~mnemetric.errors.ConfigError`.
* The real endpoint: ``base_url`` (None: ``$OPENAI_BASE_URL``, else OpenAI) with ``$OPENAI_API_KEY``, as
  every other model call of the run (the cache key names the real endpoint, never the proxy's port).
  Code whose clients talk to several endpoints (a controller model here, embeddings there) asks
  :meth:`ModelProxy.route` for one base URL per real endpoint: ``route(real)`` is
  ``http://127.0.0.1:PORT/r<n>/v1``, and the requests that arrive under it go to ``real``.
* Context: a request is served in a copy of the context the current attribution block was opened in
  (:mod:`contextvars`), so the caller's open tallies (:func:`mnemetric.llm.tally.tallying`) count the
  library's calls as if the caller had made them.
* Attribution: :meth:`ModelProxy.attribute` sets (memory system, phase "ingest" | "query", question_id)
  for the requests that arrive while it is open (a proxy serves one memory system's questions one after
  another; requests outside any block count under phase "setup"). :attr:`ModelProxy.ledger`
  (:mod:`mnemetric.llm.proxy_ledger`) holds the counts per system and phase.
* Errors: a request that cannot be answered (the budget, a server that keeps failing, a non-answer, an
  unserved path or stream=true) gets an OpenAI-shaped error reply (with ``x-should-retry: false``) AND is
  recorded; when the attribution block ends, the first recorded error is raised — the budget's
  :class:`~mnemetric.llm.budget.BudgetExceeded` as it is, anything else as a
  :class:`~mnemetric.errors.PluginError` naming the memory system, the question, the phase and the call —
  whether or not the library swallowed the error reply.
* Requests are handled one at a time (the executor is not shared between threads); a library's parallel
  calls wait their turn.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mnemetric.errors import ConfigError, MnemetricError, PluginError
from mnemetric.execute.calls import ANSWER, PENDING
from mnemetric.llm.budget import BudgetExceeded
from mnemetric.llm.proxy_http import (CHAT, EMBEDDINGS, PREFIX, SERVED, QuietServer, Rejected, all_answered, chat_call,
                                      chat_reply, embedding_calls, embeddings_reply, error_body, handler_for)
from mnemetric.llm.proxy_ledger import PHASES, ProxyLedger, Snapshot

__all__ = ["DUMMY_KEY", "PHASES", "Attribution", "ModelProxy", "NoModelProxy", "active", "current"]

DUMMY_KEY = "sk-mnemetric-proxy"
"""The API key a library is given: any non-empty value (the proxy ignores it; the real key stays here)."""
_ACTIVE: list[ModelProxy] = []


class NoModelProxy(MnemetricError):
    """An adapter asked for the model proxy outside a run that serves one."""


def active() -> ModelProxy:
    """The proxy open in this process (the innermost), for an adapter to point its library at."""
    if not _ACTIVE:
        raise NoModelProxy("no model proxy is running: this memory system needs one; run it through "
                           "`mnemetric retrieve` / dvc (stage retrieve), which serve one around its questions")
    return _ACTIVE[-1]


def current() -> ModelProxy | None:
    """The open proxy, or None (the harness: attribute when there is one)."""
    return _ACTIVE[-1] if _ACTIVE else None


@dataclass(frozen=True)
class Attribution:
    """Who the requests arriving now are for."""

    system: str
    phase: str
    question_id: str | None = None

    def where(self) -> str:
        q = f"question {self.question_id}" if self.question_id is not None else "no question"
        return f"{self.phase} of {q}"


@dataclass
class ProxyFailure:
    """One request the proxy could not answer."""

    attribution: Attribution
    call: str
    """e.g. "POST /v1/chat/completions (model gpt-4o-mini)"."""
    error: BaseException | None
    message: str


class ModelProxy:
    """The loopback endpoint (module docstring). ``executor``: the run's executor; ``base_url``: the real
    endpoint (None: ``$OPENAI_BASE_URL`` or OpenAI); ``port``: 0 = any free port; ``system``: the memory
    system requests outside an attribution block are counted for."""

    def __init__(self, executor: Any, *, base_url: str | None = None, port: int = 0, host: str = "127.0.0.1",
                 system: str = "unattributed"):
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ConfigError("memory_llm.port", f"must be an integer 0..65535 (0: any free port), got {port!r}")
        self.executor, self.real_base_url, self.host, self.port_asked = executor, base_url, host, port
        self.api_key = DUMMY_KEY
        self.ledger = ProxyLedger()
        self.failures: list[ProxyFailure] = []
        self._default = Attribution(system, "setup")
        self._who = self._default
        self._lock = threading.Lock()
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None
        self._raised = 0
        self._routes: dict[str, str | None] = {}
        self._context: contextvars.Context | None = None

    # -- lifetime ----------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model proxy is not running (use it as a context manager)")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what a library is given as its OpenAI base URL."""
        return f"http://{self.host}:{self.port}/v1"

    def route(self, real_base_url: str | None) -> str:
        """The base URL under which requests go to ``real_base_url`` (module docstring): one per distinct real
        endpoint, stable for the proxy's lifetime; None is the default endpoint (:attr:`base_url`)."""
        if real_base_url is None or real_base_url == self.real_base_url:
            return self.base_url
        with self._lock:
            name = next((n for n, url in self._routes.items() if url == real_base_url), None)
            if name is None:
                name = f"r{len(self._routes) + 1}"
                self._routes[name] = real_base_url
        return f"http://{self.host}:{self.port}/{name}{PREFIX}"

    def split(self, path: str) -> tuple[str | None, str]:
        """(the real endpoint, the path under ``/v1``) of a request path; an unknown route keeps the path (so the
        reply names it)."""
        head, _, rest = path.lstrip("/").partition("/")
        if head in self._routes and rest:
            return self._routes[head], "/" + rest
        return self.real_base_url, path

    def start(self) -> ModelProxy:
        try:
            self._server = QuietServer((self.host, self.port_asked), handler_for(self))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError("memory_llm.port", f"port {self.port_asked} on {self.host} is already in use, so "
                                  "the model proxy cannot listen there",
                                  fix="choose a free port, or 0 (any free port)") from None
            raise ConfigError("memory_llm.port", f"the model proxy cannot listen on {self.host}:{self.port_asked}: "
                              f"{exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                                        name="mnemetric-model-proxy")
        self._thread.start()
        _ACTIVE.append(self)
        return self

    def stop(self) -> None:
        """Stop serving. A request in flight (the run was interrupted while the library waited) is given the
        executor's ``grace_seconds`` (default 30) to finish, so its paid answer is committed to the cache."""
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        grace = getattr(self.executor, "grace_seconds", None)
        if self._lock.acquire(timeout=30.0 if grace is None else max(0.0, float(grace))):
            self._lock.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        if exc_type is None:
            self.raise_failures()

    # -- attribution -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def attribute(self, *, system: str, phase: str, question_id: str | None = None) -> Iterator[Attribution]:
        """Count the requests that arrive inside for (system, phase, question_id); at the end raise the first
        request failure recorded inside (module docstring), even when the library swallowed its error reply."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}")
        who, previous = Attribution(str(system), phase, question_id), self._who
        before = self._context
        with self._lock:
            self._who, self._context = who, contextvars.copy_context()
        start = time.monotonic()
        try:
            yield who
        except Exception:
            if len(self.failures) > self._raised:
                self.raise_failures()  # the cause of the library's error: ours, said plainly
            raise
        finally:
            with self._lock:
                self._who, self._context = previous, before
            self.ledger.add_seconds(who.system, who.phase, time.monotonic() - start)
        self.raise_failures()

    def raise_failures(self) -> None:
        """Raise the first failure not raised yet (BudgetExceeded as it is, others as a PluginError)."""
        if len(self.failures) <= self._raised:
            return
        first, self._raised = self.failures[self._raised], len(self.failures)
        if isinstance(first.error, BudgetExceeded):
            raise first.error
        who = first.attribution
        raise PluginError(f"memory system {who.system}", f"{who.where()}: {first.call} through the model proxy",
                          first.message, fix="see the message; a rerun asks again (failed requests are never "
                                             "cached, answered ones are not paid twice)") from first.error

    # -- requests (called by the HTTP handler threads) -----------------------------------------------
    def unserved(self, method: str, path: str) -> tuple[int, dict[str, Any]]:
        message = f"mnemetric model proxy: no endpoint {method} {path}; it serves {SERVED} (streaming off)"
        self._fail(f"{method} {path}", None, message)
        return 404, error_body(message, code="unknown_url")

    def _fail(self, call: str, error: BaseException | None, message: str) -> None:
        with self._lock:
            self.failures.append(ProxyFailure(self._who, call, error, message))

    def handle(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Serve one request body (``path``: as it arrived, a route's prefix included): (HTTP status, reply
        body). Never raises."""
        real, path = self.split(path)
        call_name = f"POST {path} (model {body.get('model')!s})"
        with self._lock:
            who, context = self._who, self._context
            try:
                if context is not None:  # the attribution block's context (module docstring)
                    return context.run(self._serve, path, body, who, real)
                return self._serve(path, body, who, real)
            except Rejected as exc:
                self.failures.append(ProxyFailure(who, call_name, None, exc.message))
                return exc.status, error_body(exc.message, exc.kind)
            except BudgetExceeded as exc:
                self.failures.append(ProxyFailure(who, call_name, exc, str(exc)))
                return 429, error_body(f"mnemetric model proxy: {exc}", "insufficient_quota", "budget_exceeded")
            except MnemetricError as exc:  # the real endpoint kept failing, no key, ...
                self.failures.append(ProxyFailure(who, call_name, exc, str(exc)))
                status = getattr(exc, "status", None) or 502
                return status, error_body(f"mnemetric model proxy: {exc}", "api_error")
            except Exception as exc:  # noqa: BLE001 - a bug here must reach the run, not kill the thread
                self.failures.append(ProxyFailure(who, call_name, exc, f"{type(exc).__name__}: {exc}"))
                return 500, error_body(f"mnemetric model proxy: internal error {type(exc).__name__}: {exc}",
                                       "server_error")

    def _serve(self, path: str, body: Mapping[str, Any], who: Attribution,
               real: str | None) -> tuple[int, dict[str, Any]]:
        tag = who.question_id
        usage = self.executor.usage
        text = _body_text(body)
        if path == CHAT:
            call = chat_call(body, real, tag)
            before = Snapshot.of(usage)
            ok = False
            try:
                (outcome,) = self.executor.run([call], desc="memory", progress=False)
                ok = outcome.kind == ANSWER
            finally:
                tokens = self.ledger.record(who.system, who.phase, "chat", before, usage, ok=ok, body_text=text)
            if not ok:
                raise Rejected(*_not_answered(outcome))
            cache = getattr(self.executor, "cache", None)
            stored = cache.get(call.key) if cache is not None else None
            return 200, chat_reply(outcome, call, stored, tokens)
        if path == EMBEDDINGS:
            calls, encoding = embedding_calls(body, real, tag)
            before = Snapshot.of(usage)
            ok = False
            try:
                outcomes = self.executor.run(calls, desc="memory", progress=False)
                ok = all_answered(outcomes)
            finally:
                tokens = self.ledger.record(who.system, who.phase, "embeddings", before, usage, ok=ok,
                                            body_text=text)
            if not ok:
                raise Rejected(*_not_answered(next(o for o in outcomes if o.kind != ANSWER)))
            return 200, embeddings_reply(calls, outcomes, encoding, tokens[0])
        raise Rejected(404, f"mnemetric model proxy: no endpoint POST {path}; it serves {SERVED}")


def _not_answered(outcome: Any) -> tuple[int, str, str]:
    if outcome.kind == PENDING:
        return 503, (f"mnemetric model proxy: the executor deferred the request ({outcome.reason}); a memory "
                     "library needs its replies now: use executor=immediate"), "server_error"
    return 502, (f"mnemetric model proxy: the model gave no usable answer ({outcome.kind}: {outcome.reason}); "
                 "a non-answer is never cached nor passed on as an answer"), "api_error"


def _body_text(body: Mapping[str, Any]) -> str:
    import json

    try:
        return json.dumps(body, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(body)
